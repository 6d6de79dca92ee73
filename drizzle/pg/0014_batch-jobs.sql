CREATE TABLE "batch_files" (
	"id" text PRIMARY KEY NOT NULL,
	"key_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"filename" text NOT NULL,
	"bytes" bigint NOT NULL,
	"lines" integer NOT NULL,
	"endpoint" text NOT NULL,
	"model" text NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"cost_micros" bigint NOT NULL,
	"deleted_at" bigint
);
--> statement-breakpoint
CREATE TABLE "batch_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"key_id" text NOT NULL,
	"tenant_id" text,
	"request_id" text NOT NULL,
	"node" text NOT NULL,
	"created_at" bigint NOT NULL,
	"input_file_id" text,
	"model" text NOT NULL,
	"reserved_micros" bigint NOT NULL,
	"status" text NOT NULL,
	"settled_at" bigint,
	"claimed_by" text,
	"claimed_until" bigint DEFAULT 0 NOT NULL,
	"deleted_at" bigint
);
--> statement-breakpoint
CREATE INDEX "batch_jobs_key_list" ON "batch_jobs" USING btree ("key_id","provider","created_at","id");--> statement-breakpoint
CREATE INDEX "batch_jobs_unsettled" ON "batch_jobs" USING btree ("node","settled_at","claimed_until") WHERE settled_at IS NULL;