/**
 * Reading spend: totals come from the daily rollups (never a scan of ledger
 * rows; over every key, from the all-keys daily rollup), in-flight counts
 * from the ledger's small partial index on pending rows. Days are UTC
 * calendar days.
 */
import type { TollgateDatabase } from '../db/open.js';
import { addDays, calendarDay, dayEndMs, dayStartMs, isCalendarDay, monthStartOf } from '../calendar.js';

export type SpendGrouping = 'day' | 'model' | 'key' | 'tenant' | 'total';

export interface SpendQuery {
  readonly keyId?: string | undefined;
  readonly tenantId?: string | undefined;
  /** First UTC day included, YYYY-MM-DD. */
  readonly since: string;
  /** Last UTC day included, YYYY-MM-DD (default: today). */
  readonly until?: string | undefined;
  readonly by: SpendGrouping;
}

export interface SpendTotals {
  readonly requests: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly reasoningTokens: number;
  readonly costMicros: number;
  readonly errors: number;
  readonly rejectedRateLimit: number;
  readonly rejectedBudget: number;
}

export interface SpendRow extends SpendTotals {
  /** The day, model, key name or tenant name this row sums (absent for `total`). */
  readonly group: string;
  /** For `by: key`, the key's id and prefix. */
  readonly keyId?: string;
  readonly prefix?: string;
}

export interface SpendReport {
  readonly since: string;
  readonly until: string;
  readonly by: SpendGrouping;
  readonly rows: SpendRow[];
  readonly total: SpendTotals;
  /** Requests sent upstream and not settled yet (their estimate is in the totals). */
  readonly pending: number;
}

const SUMS = `coalesce(sum(r.requests), 0) AS requests,
  coalesce(sum(r.prompt_tokens), 0) AS promptTokens,
  coalesce(sum(r.cached_tokens), 0) AS cachedTokens,
  coalesce(sum(r.completion_tokens), 0) AS completionTokens,
  coalesce(sum(r.reasoning_tokens), 0) AS reasoningTokens,
  coalesce(sum(r.cost_micros), 0) AS costMicros,
  coalesce(sum(r.errors), 0) AS errors,
  coalesce(sum(r.rejected_rate_limit), 0) AS rejectedRateLimit,
  coalesce(sum(r.rejected_budget), 0) AS rejectedBudget`;

const GROUP_COLUMNS: Record<SpendGrouping, { select: string; group: string; order: string }> = {
  day: { select: 'r.day AS "group"', group: 'GROUP BY r.day', order: 'ORDER BY r.day' },
  model: { select: 'r.model AS "group"', group: 'GROUP BY r.model', order: 'ORDER BY costMicros DESC, r.model' },
  key: { select: 'k.name AS "group", k.id AS keyId, k.prefix AS prefix', group: 'GROUP BY k.id', order: 'ORDER BY costMicros DESC, k.name' },
  tenant: { select: `coalesce(t.name, '(no tenant)') AS "group"`, group: 'GROUP BY k.tenant_id', order: 'ORDER BY costMicros DESC' },
  total: { select: `'total' AS "group"`, group: '', order: '' },
};

/** Spend over a range of UTC days, grouped as asked, with the grand total. */
export function querySpend(database: TollgateDatabase, query: SpendQuery, now = Date.now()): SpendReport {
  const until = query.until ?? calendarDay(now);
  const where = ['r.day >= @since', 'r.day <= @until'];
  if (query.keyId !== undefined) where.push('r.key_id = @keyId');
  if (query.tenantId !== undefined) where.push('k.tenant_id = @tenantId');
  const params = { since: query.since, until, keyId: query.keyId, tenantId: query.tenantId };
  const from = `FROM rollups_daily r JOIN api_keys k ON k.id = r.key_id LEFT JOIN tenants t ON t.id = k.tenant_id WHERE ${where.join(' AND ')}`;
  const shape = GROUP_COLUMNS[query.by];
  const rows = database.sqlite.prepare(`SELECT ${shape.select}, ${SUMS} ${from} ${shape.group} ${shape.order}`).all(params) as SpendRow[];
  // Over every key, the all-keys daily rollup holds the same sums in one row a day (every rollup row belongs to a key: keys are never deleted).
  const totalSql =
    query.keyId === undefined && query.tenantId === undefined
      ? `SELECT ${SUMS} FROM rollups_daily_total r WHERE r.day >= @since AND r.day <= @until`
      : `SELECT ${SUMS} ${from}`;
  const total = database.sqlite.prepare(totalSql).get(params) as SpendTotals;
  const pendingWhere = ["l.status = 'pending'", 'l.created_at >= @sinceMs', 'l.created_at < @untilMs'];
  if (query.keyId !== undefined) pendingWhere.push('l.key_id = @keyId');
  if (query.tenantId !== undefined) pendingWhere.push('l.tenant_id = @tenantId');
  const pending = database.sqlite
    .prepare(`SELECT count(*) AS n FROM ledger l WHERE ${pendingWhere.join(' AND ')}`)
    .get({ ...params, sinceMs: dayStartMs(query.since), untilMs: dayEndMs(until) }) as { n: number };
  return { since: query.since, until, by: query.by, rows: query.by === 'total' ? [] : rows, total, pending: pending.n };
}

/**
 * Turns `--since` text into a UTC day: `7d` (the last 7 days, today
 * included), `today`, `month` (the 1st of this month), or `YYYY-MM-DD`.
 */
export function parseSince(text: string, now = Date.now()): string {
  const trimmed = text.trim();
  const days = /^(\d+)d$/.exec(trimmed);
  if (days) {
    const n = Number(days[1]);
    if (n < 1) throw new RangeError('--since Nd needs N ≥ 1');
    return addDays(calendarDay(now), -(n - 1));
  }
  if (trimmed === 'today') return calendarDay(now);
  if (trimmed === 'month') return monthStartOf(calendarDay(now));
  if (isCalendarDay(trimmed)) return trimmed;
  throw new RangeError(`"${text}" is not a start day (use 7d, today, month or YYYY-MM-DD)`);
}
