ALTER TABLE "api_keys" ADD COLUMN "throttled_at" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "throttle_reason" text;