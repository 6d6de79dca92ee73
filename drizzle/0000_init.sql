CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`tenant_id` text,
	`key_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`revoked_at` integer,
	`expires_at` integer,
	`rotated_at` integer,
	`policy` text DEFAULT '{"limits":[]}' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`version` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_live_name_unique` ON `api_keys` (`name`) WHERE revoked_at IS NULL;--> statement-breakpoint
CREATE INDEX `api_keys_prefix` ON `api_keys` (`prefix`);--> statement-breakpoint
CREATE INDEX `api_keys_tenant` ON `api_keys` (`tenant_id`);--> statement-breakpoint
CREATE INDEX `api_keys_version` ON `api_keys` (`version`);--> statement-breakpoint
CREATE TABLE `rollups_daily` (
	`key_id` text NOT NULL,
	`day` text NOT NULL,
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
	PRIMARY KEY(`key_id`, `day`, `model`)
);
--> statement-breakpoint
CREATE INDEX `rollups_daily_day` ON `rollups_daily` (`day`);--> statement-breakpoint
CREATE TABLE `rollups_hourly` (
	`key_id` text NOT NULL,
	`hour` integer NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	`rejected_rate_limit` integer DEFAULT 0 NOT NULL,
	`rejected_budget` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`key_id`, `hour`)
);
--> statement-breakpoint
CREATE INDEX `rollups_hourly_hour` ON `rollups_hourly` (`hour`);--> statement-breakpoint
CREATE TABLE `ledger` (
	`request_id` text PRIMARY KEY NOT NULL,
	`key_id` text NOT NULL,
	`tenant_id` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	`endpoint` text NOT NULL,
	`model` text NOT NULL,
	`stream` integer NOT NULL,
	`status` text NOT NULL,
	`http_status` integer,
	`est_prompt_tokens` integer DEFAULT 0 NOT NULL,
	`est_completion_tokens` integer DEFAULT 0 NOT NULL,
	`est_cost_micros` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer,
	`cached_tokens` integer,
	`completion_tokens` integer,
	`reasoning_tokens` integer,
	`cost_micros` integer,
	`price_known` integer DEFAULT true NOT NULL,
	`usage_source` text,
	`latency_ms` integer,
	`ttft_ms` integer,
	`upstream_request_id` text,
	`error_code` text,
	FOREIGN KEY (`key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `ledger_key_time` ON `ledger` (`key_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `ledger_time` ON `ledger` (`created_at`);--> statement-breakpoint
CREATE INDEX `ledger_pending` ON `ledger` (`created_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE TABLE `tenants` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`policy` text DEFAULT '{"limits":[]}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tenants_name_unique` ON `tenants` (`name`);--> statement-breakpoint
CREATE INDEX `tenants_version` ON `tenants` (`version`);