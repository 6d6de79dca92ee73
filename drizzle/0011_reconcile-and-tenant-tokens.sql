CREATE TABLE `dashboard_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`label` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dashboard_tokens_hash_unique` ON `dashboard_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `dashboard_tokens_tenant` ON `dashboard_tokens` (`tenant_id`);--> statement-breakpoint
CREATE TABLE `reconciliations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`created_at` integer NOT NULL,
	`provider` text NOT NULL,
	`since` text NOT NULL,
	`until` text NOT NULL,
	`differences` integer NOT NULL,
	`price_flags` integer NOT NULL,
	`report` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `reconciliations_created` ON `reconciliations` (`created_at`);