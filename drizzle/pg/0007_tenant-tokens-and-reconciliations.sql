CREATE TABLE "dashboard_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"label" text DEFAULT '' NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "reconciliations" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "reconciliations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"created_at" bigint NOT NULL,
	"provider" text NOT NULL,
	"since" text NOT NULL,
	"until" text NOT NULL,
	"differences" integer NOT NULL,
	"price_flags" integer NOT NULL,
	"report" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "dashboard_tokens" ADD CONSTRAINT "dashboard_tokens_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "dashboard_tokens_hash_unique" ON "dashboard_tokens" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "dashboard_tokens_tenant" ON "dashboard_tokens" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "reconciliations_created" ON "reconciliations" USING btree ("created_at");