ALTER TABLE `ledger` ADD `upstream` text;--> statement-breakpoint
ALTER TABLE `ledger` ADD `attempts` integer;--> statement-breakpoint
ALTER TABLE `ledger` ADD `billed_attempts` integer;