CREATE TABLE `rollup_names` (
	`key_id` text NOT NULL,
	`day` text NOT NULL,
	`end_users` integer DEFAULT 0 NOT NULL,
	`tags` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`key_id`, `day`)
);
--> statement-breakpoint
ALTER TABLE `ledger` ADD `rollup_folded` integer;--> statement-breakpoint
ALTER TABLE `ledger` ADD `rollup_exact` integer;--> statement-breakpoint
-- Appended by hand: the counts follow the rollup rows in the same transaction
-- (a new end-user or tag row of a key·day adds one; `(other)` is not a name),
-- and start from the rows already there.
CREATE TRIGGER rollups_end_users_count AFTER INSERT ON rollups_end_users WHEN NEW.end_user <> '(other)' BEGIN
  INSERT INTO rollup_names (key_id, day, end_users) VALUES (NEW.key_id, NEW.day, 1)
    ON CONFLICT(key_id, day) DO UPDATE SET end_users = end_users + 1;
END;
--> statement-breakpoint
CREATE TRIGGER rollups_tags_count AFTER INSERT ON rollups_tags WHEN NEW.tag <> '(other)' BEGIN
  INSERT INTO rollup_names (key_id, day, tags) VALUES (NEW.key_id, NEW.day, 1)
    ON CONFLICT(key_id, day) DO UPDATE SET tags = tags + 1;
END;
--> statement-breakpoint
INSERT INTO rollup_names (key_id, day, end_users, tags)
  SELECT key_id, day, sum(end_users), sum(tags) FROM (
    SELECT key_id, day, count(*) AS end_users, 0 AS tags FROM rollups_end_users WHERE end_user <> '(other)' GROUP BY key_id, day
    UNION ALL SELECT key_id, day, 0, count(*) FROM rollups_tags WHERE tag <> '(other)' GROUP BY key_id, day)
  GROUP BY key_id, day;
