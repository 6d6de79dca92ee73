CREATE TABLE "alert_claims" (
	"id" text PRIMARY KEY NOT NULL,
	"claimed_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "alert_claims_expires" ON "alert_claims" USING btree ("expires_at");