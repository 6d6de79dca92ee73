CREATE TABLE `alert_claims` (
	`id` text PRIMARY KEY NOT NULL,
	`claimed_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `alert_claims_expires` ON `alert_claims` (`expires_at`);--> statement-breakpoint
CREATE TABLE `alert_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`webhook` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`claimed_until` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`last_status` integer,
	`delivered_at` integer
);
--> statement-breakpoint
CREATE INDEX `alert_outbox_due` ON `alert_outbox` (`next_attempt_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `alert_outbox_created` ON `alert_outbox` (`created_at`);