ALTER TABLE "ledger" ADD COLUMN "upstream" text;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "attempts" integer;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "billed_attempts" integer;