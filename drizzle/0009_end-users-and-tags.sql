CREATE TABLE `rollups_end_users` (
	`key_id` text NOT NULL,
	`end_user` text NOT NULL,
	`day` text NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`cached_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	`errors` integer DEFAULT 0 NOT NULL,
	`rejected_rate_limit` integer DEFAULT 0 NOT NULL,
	`rejected_budget` integer DEFAULT 0 NOT NULL,
	`last_request_at` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`key_id`, `end_user`, `day`)
);
--> statement-breakpoint
CREATE INDEX `rollups_end_users_day` ON `rollups_end_users` (`day`);--> statement-breakpoint
CREATE TABLE `rollups_tags` (
	`key_id` text NOT NULL,
	`tag` text NOT NULL,
	`day` text NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`cached_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	`errors` integer DEFAULT 0 NOT NULL,
	`rejected_rate_limit` integer DEFAULT 0 NOT NULL,
	`rejected_budget` integer DEFAULT 0 NOT NULL,
	`last_request_at` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`key_id`, `tag`, `day`)
);
--> statement-breakpoint
CREATE INDEX `rollups_tags_day` ON `rollups_tags` (`day`);--> statement-breakpoint
ALTER TABLE `ledger` ADD `end_user` text;--> statement-breakpoint
ALTER TABLE `ledger` ADD `tags` text;