ALTER TABLE `responses` ADD `item_of` text;--> statement-breakpoint
ALTER TABLE `responses` ADD `billed_tokens` integer;--> statement-breakpoint
CREATE INDEX `responses_items` ON `responses` (`item_of`) WHERE item_of IS NOT NULL;