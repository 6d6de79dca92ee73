ALTER TABLE `api_keys` ADD `throttled_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `throttle_reason` text;