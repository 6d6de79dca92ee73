ALTER TABLE "ledger" ADD COLUMN "session" text;--> statement-breakpoint
CREATE INDEX "ledger_key_session" ON "ledger" USING btree ("key_id","session","created_at") WHERE session IS NOT NULL;