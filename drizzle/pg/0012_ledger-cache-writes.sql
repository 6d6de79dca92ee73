ALTER TABLE "ledger" ADD COLUMN "cache_write_5m_tokens" bigint;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "cache_write_1h_tokens" bigint;