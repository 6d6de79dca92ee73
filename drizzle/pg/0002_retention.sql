CREATE TABLE "ledger_retention" (
	"id" integer PRIMARY KEY NOT NULL,
	"pruned_before" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Its one row, so the shipper's FOR SHARE always has a row to lock (src/ledger/retention.ts).
INSERT INTO "ledger_retention" ("id", "pruned_before") VALUES (1, 0);
