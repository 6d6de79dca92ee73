ALTER TABLE "api_keys" ADD COLUMN "suspended_at" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "suspended_by" text;