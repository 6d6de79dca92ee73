DROP INDEX `rollups_daily_day`;--> statement-breakpoint
CREATE INDEX `rollups_daily_day_cover` ON `rollups_daily` (`day`,`key_id`,`model`,`requests`,`prompt_tokens`,`cached_tokens`,`completion_tokens`,`reasoning_tokens`,`cost_micros`,`errors`,`rejected_rate_limit`,`rejected_budget`);--> statement-breakpoint
CREATE INDEX `rollups_daily_key_cover` ON `rollups_daily` (`key_id`,`day`,`model`,`requests`,`prompt_tokens`,`cached_tokens`,`completion_tokens`,`reasoning_tokens`,`cost_micros`,`errors`,`rejected_rate_limit`,`rejected_budget`);--> statement-breakpoint
DROP INDEX `rollups_hourly_hour`;--> statement-breakpoint
CREATE INDEX `rollups_hourly_hour_cover` ON `rollups_hourly` (`hour`,`requests`,`prompt_tokens`,`completion_tokens`,`cost_micros`,`rejected_rate_limit`,`rejected_budget`);--> statement-breakpoint
CREATE INDEX `ledger_pending_key` ON `ledger` (`key_id`,`created_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `ledger_key_429` ON `ledger` (`key_id`,`created_at`) WHERE http_status = 429;