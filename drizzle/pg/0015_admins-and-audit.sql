CREATE TABLE "admins" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"token_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" bigint NOT NULL,
	"created_by" text NOT NULL,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "audit_log_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"at" bigint NOT NULL,
	"actor_kind" text NOT NULL,
	"actor_name" text NOT NULL,
	"action" text NOT NULL,
	"target_kind" text NOT NULL,
	"target_id" text NOT NULL,
	"target_name" text NOT NULL,
	"before" text,
	"after" text
);
--> statement-breakpoint
CREATE UNIQUE INDEX "admins_hash_unique" ON "admins" USING btree ("token_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "admins_active_name" ON "admins" USING btree ("name") WHERE revoked_at IS NULL;--> statement-breakpoint
CREATE INDEX "audit_log_at" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_log_target" ON "audit_log" USING btree ("target_kind","target_id","id");