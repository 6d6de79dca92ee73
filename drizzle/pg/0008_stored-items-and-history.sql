ALTER TABLE "responses" ADD COLUMN "item_of" text;--> statement-breakpoint
ALTER TABLE "responses" ADD COLUMN "billed_tokens" bigint;