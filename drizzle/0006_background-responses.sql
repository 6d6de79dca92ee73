CREATE TABLE `responses` (
	`id` text PRIMARY KEY NOT NULL,
	`key_id` text NOT NULL,
	`request_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`unsettled` integer DEFAULT false NOT NULL,
	`claimed_until` integer DEFAULT 0 NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `responses_unsettled` ON `responses` (`claimed_until`) WHERE unsettled = 1;