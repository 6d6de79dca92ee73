CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"tenant_id" text,
	"key_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"revoked_at" bigint,
	"expires_at" bigint,
	"rotated_at" bigint,
	"policy" text DEFAULT '{"limits":[]}' NOT NULL,
	"metadata" text DEFAULT '{}' NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rollups_daily" (
	"key_id" text NOT NULL,
	"day" text NOT NULL,
	"model" text NOT NULL,
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
	CONSTRAINT "rollups_daily_key_id_day_model_pk" PRIMARY KEY("key_id","day","model")
);
--> statement-breakpoint
CREATE TABLE "rollups_daily_total" (
	"day" text PRIMARY KEY NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micros" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"rejected_rate_limit" bigint DEFAULT 0 NOT NULL,
	"rejected_budget" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rollups_hourly" (
	"key_id" text NOT NULL,
	"hour" bigint NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micros" bigint DEFAULT 0 NOT NULL,
	"rejected_rate_limit" bigint DEFAULT 0 NOT NULL,
	"rejected_budget" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "rollups_hourly_key_id_hour_pk" PRIMARY KEY("key_id","hour")
);
--> statement-breakpoint
CREATE TABLE "ledger" (
	"request_id" text PRIMARY KEY NOT NULL,
	"key_id" text NOT NULL,
	"tenant_id" text,
	"created_at" bigint NOT NULL,
	"completed_at" bigint,
	"endpoint" text NOT NULL,
	"model" text NOT NULL,
	"stream" boolean NOT NULL,
	"status" text NOT NULL,
	"http_status" bigint,
	"est_prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"est_completion_tokens" bigint DEFAULT 0 NOT NULL,
	"est_cost_micros" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint,
	"cached_tokens" bigint,
	"completion_tokens" bigint,
	"reasoning_tokens" bigint,
	"cost_micros" bigint,
	"price_known" boolean DEFAULT true NOT NULL,
	"usage_source" text,
	"latency_ms" bigint,
	"ttft_ms" bigint,
	"upstream_request_id" text,
	"error_code" text
);
--> statement-breakpoint
CREATE TABLE "rollups_lifetime" (
	"key_id" text PRIMARY KEY NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micros" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"rejected_rate_limit" bigint DEFAULT 0 NOT NULL,
	"rejected_budget" bigint DEFAULT 0 NOT NULL,
	"last_request_at" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rollups_monthly" (
	"month" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
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
	CONSTRAINT "rollups_monthly_month_key_id_model_pk" PRIMARY KEY("month","key_id","model")
);
--> statement-breakpoint
CREATE TABLE "tenants" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"policy" text DEFAULT '{"limits":[]}' NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger" ADD CONSTRAINT "ledger_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_unique" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_live_name_unique" ON "api_keys" USING btree ("name") WHERE revoked_at IS NULL;--> statement-breakpoint
CREATE INDEX "api_keys_prefix" ON "api_keys" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "api_keys_tenant" ON "api_keys" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "api_keys_version" ON "api_keys" USING btree ("version");--> statement-breakpoint
CREATE INDEX "rollups_daily_day" ON "rollups_daily" USING btree ("day");--> statement-breakpoint
CREATE INDEX "rollups_hourly_hour" ON "rollups_hourly" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "ledger_key_time" ON "ledger" USING btree ("key_id","created_at");--> statement-breakpoint
CREATE INDEX "ledger_pending_key" ON "ledger" USING btree ("key_id","created_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "ledger_key_429" ON "ledger" USING btree ("key_id","created_at") WHERE http_status = 429;--> statement-breakpoint
CREATE INDEX "ledger_created" ON "ledger" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "tenants_name_unique" ON "tenants" USING btree ("name");--> statement-breakpoint
CREATE INDEX "tenants_version" ON "tenants" USING btree ("version");