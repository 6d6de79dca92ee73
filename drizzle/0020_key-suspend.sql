ALTER TABLE `api_keys` ADD `suspended_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `suspended_by` text;