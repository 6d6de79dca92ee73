ALTER TABLE `ledger` ADD `audio_prompt_tokens` integer;--> statement-breakpoint
ALTER TABLE `ledger` ADD `audio_completion_tokens` integer;--> statement-breakpoint
ALTER TABLE `ledger` ADD `service_tier` text;--> statement-breakpoint
ALTER TABLE `ledger` ADD `tool_cost_micros` integer;