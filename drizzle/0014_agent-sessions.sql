ALTER TABLE `ledger` ADD `session` text;--> statement-breakpoint
CREATE INDEX `ledger_key_session` ON `ledger` (`key_id`,`session`,`created_at`) WHERE session IS NOT NULL;