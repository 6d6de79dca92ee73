/** Checks shared by the ledger tests: the longer rollups against the ledger rows. */
import { expect } from 'vitest';
import type Database from 'better-sqlite3';

/** Every column of the counters the rollups share, summed as the rows say (estimate while pending). */
const ROW_SUMS = `sum(CASE WHEN status = 'pending' THEN est_cost_micros ELSE cost_micros END) AS cost,
  sum(CASE WHEN status = 'pending' THEN est_prompt_tokens ELSE prompt_tokens END) AS prompt,
  sum(CASE WHEN status = 'pending' THEN est_completion_tokens ELSE completion_tokens END) AS completion,
  sum(status NOT IN ('rejected', 'invalid_request')) AS requests`;
const ROLLUP_SUMS = 'sum(cost_micros) AS cost, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, sum(requests) AS requests';
const DAY_OF_ROW = "strftime('%Y-%m-%d', created_at / 1000, 'unixepoch')";

/** The monthly, all-keys daily and lifetime rollups equal the ledger rows, per month·key·model, per day, per key. */
export function expectLongerRollupsEqualRows(sql: Database.Database): void {
  const monthly = sql
    .prepare(`SELECT month, key_id, model, ${ROLLUP_SUMS} FROM rollups_monthly GROUP BY month, key_id, model ORDER BY month, key_id, model`)
    .all();
  const monthlyRows = sql
    .prepare(`SELECT substr(${DAY_OF_ROW}, 1, 7) AS month, key_id, model, ${ROW_SUMS} FROM ledger GROUP BY month, key_id, model ORDER BY month, key_id, model`)
    .all();
  expect(monthly).toEqual(monthlyRows);
  const daily = sql.prepare(`SELECT day, ${ROLLUP_SUMS} FROM rollups_daily_total GROUP BY day ORDER BY day`).all();
  const dailyRows = sql.prepare(`SELECT ${DAY_OF_ROW} AS day, ${ROW_SUMS} FROM ledger GROUP BY day ORDER BY day`).all();
  expect(daily).toEqual(dailyRows);
  const lifetime = sql.prepare(`SELECT key_id, ${ROLLUP_SUMS}, max(last_request_at) AS last FROM rollups_lifetime GROUP BY key_id ORDER BY key_id`).all();
  const lifetimeRows = sql.prepare(`SELECT key_id, ${ROW_SUMS}, max(created_at) AS last FROM ledger GROUP BY key_id ORDER BY key_id`).all();
  expect(lifetime).toEqual(lifetimeRows);
}
