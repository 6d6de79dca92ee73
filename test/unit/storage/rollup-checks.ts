/** Checks shared by the ledger tests: the longer rollups against the ledger rows. */
import { expect } from 'vitest';
import type Database from 'better-sqlite3';
import { calendarDay } from '../../../src/domain/calendar.js';
import { decodeTags, rollupNamesOf } from '../../../src/domain/rollup-names.js';
import { countsOf, type LedgerState, type RowCounts } from '../../../src/storage/row-counts.js';

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

/** A ledger row as the named rollups' check reads it. */
export type NamedRow = LedgerState & { key_id: string; end_user: string | null; tags: string | null; rollup_folded: number | null };

/** The columns of {@link NamedRow}. */
export const NAMED_ROW_COLUMNS = `key_id, created_at, status, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens,
  completion_tokens, reasoning_tokens, cost_micros, error_code, end_user, tags, rollup_folded`;

/** The rollup rows' columns the check compares, keyed `key|name|day` (SQL over rollups_end_users or rollups_tags). */
export function namedRollupSql(table: 'rollups_end_users' | 'rollups_tags'): string {
  const column = table === 'rollups_end_users' ? 'end_user' : 'tag';
  return `SELECT key_id || '|' || ${column} || '|' || day AS id, requests, cost_micros AS cost, prompt_tokens AS prompt, completion_tokens AS completion,
    errors, rejected_rate_limit + rejected_budget AS rejected FROM ${table}`;
}

/** What the end-user and tag rollups must hold for `rows`: each row's counters (row-counts.ts) under its names, or `(other)` for those folded. */
export function expectedNamedRollups(rows: readonly NamedRow[]): { user: Record<string, Record<string, number>>; tag: Record<string, Record<string, number>> } {
  const want = { user: new Map<string, Record<string, number>>(), tag: new Map<string, Record<string, number>>() };
  const add = (map: Map<string, Record<string, number>>, id: string, counts: RowCounts) => {
    const sum = map.get(id) ?? { requests: 0, cost: 0, prompt: 0, completion: 0, errors: 0, rejected: 0 };
    sum.requests! += counts.requests;
    sum.cost! += counts.costMicros;
    sum.prompt! += counts.promptTokens;
    sum.completion! += counts.completionTokens;
    sum.errors! += counts.errors;
    sum.rejected! += counts.rejectedRateLimit + counts.rejectedBudget;
    map.set(id, sum);
  };
  for (const row of rows) {
    const counts = countsOf(row);
    const day = calendarDay(Number(row.created_at));
    const names = rollupNamesOf(row.end_user, decodeTags(row.tags), row.rollup_folded);
    if (names.endUser !== undefined) add(want.user, `${row.key_id}|${names.endUser}|${day}`, counts);
    for (const tag of names.tags) add(want.tag, `${row.key_id}|${tag}|${day}`, counts);
  }
  return { user: Object.fromEntries(want.user), tag: Object.fromEntries(want.tag) };
}

/** Rollup rows read with {@link namedRollupSql}, keyed by their id. */
export function byId(rows: ReadonlyArray<{ id: string } & Record<string, number | string>>): Record<string, Record<string, number>> {
  return Object.fromEntries(rows.map(({ id, ...sums }) => [id, Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, Number(v)]))]));
}

/**
 * The end-user and tag rollups equal the ledger rows filed under them: each row's counters
 * (row-counts.ts) under its own names, or `(other)` for those its `rollup_folded` bits name.
 */
export function expectNamedRollupsEqualRows(sql: Database.Database): void {
  const want = expectedNamedRollups(sql.prepare(`SELECT ${NAMED_ROW_COLUMNS} FROM ledger`).all() as NamedRow[]);
  expect(byId(sql.prepare(namedRollupSql('rollups_end_users')).all() as Array<{ id: string } & Record<string, number>>), 'rollups_end_users').toEqual(
    want.user,
  );
  expect(byId(sql.prepare(namedRollupSql('rollups_tags')).all() as Array<{ id: string } & Record<string, number>>), 'rollups_tags').toEqual(want.tag);
}
