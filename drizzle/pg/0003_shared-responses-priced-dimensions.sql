CREATE TABLE "responses" (
	"id" text PRIMARY KEY NOT NULL,
	"key_id" text NOT NULL,
	"request_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"deleted_at" bigint
);
--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "audio_prompt_tokens" bigint;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "audio_completion_tokens" bigint;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "service_tier" text;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "tool_cost_micros" bigint;--> statement-breakpoint
ALTER TABLE "responses" ADD CONSTRAINT "responses_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;