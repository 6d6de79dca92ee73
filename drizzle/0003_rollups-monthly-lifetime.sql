CREATE TABLE `rollups_daily_total` (
	`day` text PRIMARY KEY NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`cached_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	`errors` integer DEFAULT 0 NOT NULL,
	`rejected_rate_limit` integer DEFAULT 0 NOT NULL,
	`rejected_budget` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rollups_lifetime` (
	`key_id` text PRIMARY KEY NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`cached_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	`errors` integer DEFAULT 0 NOT NULL,
	`rejected_rate_limit` integer DEFAULT 0 NOT NULL,
	`rejected_budget` integer DEFAULT 0 NOT NULL,
	`last_request_at` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rollups_monthly` (
	`month` text NOT NULL,
	`key_id` text NOT NULL,
	`model` text NOT NULL,
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
	PRIMARY KEY(`month`, `key_id`, `model`)
);
--> statement-breakpoint
-- Backfill (appended by hand to the generated SQL): the new rollups start equal to rollups_daily, which equals the ledger rows, so a database from the previous version shows the same totals after upgrading.
INSERT INTO `rollups_monthly` (`month`, `key_id`, `model`, `requests`, `prompt_tokens`, `cached_tokens`, `completion_tokens`, `reasoning_tokens`, `cost_micros`, `errors`, `rejected_rate_limit`, `rejected_budget`, `last_request_at`)
SELECT substr(`day`, 1, 7), `key_id`, `model`, sum(`requests`), sum(`prompt_tokens`), sum(`cached_tokens`), sum(`completion_tokens`), sum(`reasoning_tokens`), sum(`cost_micros`), sum(`errors`), sum(`rejected_rate_limit`), sum(`rejected_budget`), max(`last_request_at`)
FROM `rollups_daily` GROUP BY substr(`day`, 1, 7), `key_id`, `model`;
--> statement-breakpoint
INSERT INTO `rollups_daily_total` (`day`, `requests`, `prompt_tokens`, `cached_tokens`, `completion_tokens`, `reasoning_tokens`, `cost_micros`, `errors`, `rejected_rate_limit`, `rejected_budget`)
SELECT `day`, sum(`requests`), sum(`prompt_tokens`), sum(`cached_tokens`), sum(`completion_tokens`), sum(`reasoning_tokens`), sum(`cost_micros`), sum(`errors`), sum(`rejected_rate_limit`), sum(`rejected_budget`)
FROM `rollups_daily` GROUP BY `day`;
--> statement-breakpoint
INSERT INTO `rollups_lifetime` (`key_id`, `requests`, `prompt_tokens`, `cached_tokens`, `completion_tokens`, `reasoning_tokens`, `cost_micros`, `errors`, `rejected_rate_limit`, `rejected_budget`, `last_request_at`)
SELECT `key_id`, sum(`requests`), sum(`prompt_tokens`), sum(`cached_tokens`), sum(`completion_tokens`), sum(`reasoning_tokens`), sum(`cost_micros`), sum(`errors`), sum(`rejected_rate_limit`), sum(`rejected_budget`), max(`last_request_at`)
FROM `rollups_daily` GROUP BY `key_id`;
