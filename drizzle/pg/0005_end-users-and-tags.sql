CREATE TABLE "rollups_end_users" (
	"key_id" text NOT NULL,
	"end_user" text NOT NULL,
	"day" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micros" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"rejected_rate_limit" bigint DEFAULT 0 NOT NULL,
	"rejected_budget" bigint DEFAULT 0 NOT NULL,
	"last_request_at" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "rollups_end_users_key_id_end_user_day_pk" PRIMARY KEY("key_id","end_user","day")
);
--> statement-breakpoint
CREATE TABLE "rollups_tags" (
	"key_id" text NOT NULL,
	"tag" text NOT NULL,
	"day" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micros" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"rejected_rate_limit" bigint DEFAULT 0 NOT NULL,
	"rejected_budget" bigint DEFAULT 0 NOT NULL,
	"last_request_at" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "rollups_tags_key_id_tag_day_pk" PRIMARY KEY("key_id","tag","day")
);
--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "end_user" text;--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "tags" text;--> statement-breakpoint
CREATE INDEX "rollups_end_users_day" ON "rollups_end_users" USING btree ("day");--> statement-breakpoint
CREATE INDEX "rollups_tags_day" ON "rollups_tags" USING btree ("day");