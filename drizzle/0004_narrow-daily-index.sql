DROP INDEX `rollups_daily_day_cover`;--> statement-breakpoint
CREATE INDEX `rollups_daily_day` ON `rollups_daily` (`day`);