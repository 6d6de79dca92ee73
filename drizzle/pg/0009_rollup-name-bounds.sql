CREATE TABLE "rollup_names" (
	"key_id" text NOT NULL,
	"day" text NOT NULL,
	"end_users" integer DEFAULT 0 NOT NULL,
	"tags" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "rollup_names_key_id_day_pk" PRIMARY KEY("key_id","day")
);
--> statement-breakpoint
ALTER TABLE "ledger" ADD COLUMN "rollup_folded" integer;--> statement-breakpoint
-- Appended by hand: the counts start from the rollup rows already there.
INSERT INTO "rollup_names" ("key_id", "day", "end_users", "tags")
  SELECT key_id, day, sum(end_users)::integer, sum(tags)::integer FROM (
    SELECT key_id, day, count(*) AS end_users, 0 AS tags FROM rollups_end_users WHERE end_user <> '(other)' GROUP BY key_id, day
    UNION ALL SELECT key_id, day, 0, count(*) FROM rollups_tags WHERE tag <> '(other)' GROUP BY key_id, day) AS counted
  GROUP BY key_id, day;
