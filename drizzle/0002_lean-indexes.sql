DROP INDEX `rollups_daily_key_cover`;--> statement-breakpoint
DROP INDEX `ledger_time`;--> statement-breakpoint
DROP INDEX `ledger_pending`;