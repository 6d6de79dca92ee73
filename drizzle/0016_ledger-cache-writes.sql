ALTER TABLE `ledger` ADD `cache_write_5m_tokens` integer;--> statement-breakpoint
ALTER TABLE `ledger` ADD `cache_write_1h_tokens` integer;