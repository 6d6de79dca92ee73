/**
 * Reading spend: totals come from the daily rollups (never a scan of ledger
 * rows; over every key, from the all-keys daily rollup), in-flight counts
 * from the ledger's small partial index on pending rows. Days are UTC
 * calendar days.
 */
import type { TollgateDatabase } from '../db/open.js';
import { addDays, calendarDay, dayEndMs, dayStartMs, isCalendarDay, monthStartOf } from '../calendar.js';

export type SpendGrouping = 'day' | 'model' | 'key' | 'tenant' | 'user' | 'tag' | 'total';

/** Every grouping, in the order the CLI and the admin API list them. */
export const SPEND_GROUPINGS: readonly SpendGrouping[] = ['day', 'model', 'key', 'tenant', 'user', 'tag', 'total'];

/** The `user` group of requests that named no end user. */
export const NO_END_USER = '(no end user)';

export interface SpendQuery {
  readonly keyId?: string | undefined;
  readonly tenantId?: string | undefined;
  /** First UTC day included, YYYY-MM-DD. */
  readonly since: string;
  /** Last UTC day included, YYYY-MM-DD (default: today). */
  readonly until?: string | undefined;
  readonly by: SpendGrouping;
  /** The first rows only (the most spent first; for `user` and `tag`: the dashboard's top lists). */
  readonly limit?: number | undefined;
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
  /** For `by: key`, `user` and `tag`: the key's id and prefix (end users and tags belong to a key). */
  readonly keyId?: string;
  readonly prefix?: string;
  /** For `by: user` and `tag`: the key's name. */
  readonly key?: string;
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
  user: {
    select: 'r.end_user AS "group", k.id AS keyId, k.prefix AS prefix, k.name AS key',
    group: 'GROUP BY r.key_id, r.end_user',
    order: 'ORDER BY costMicros DESC, r.end_user, k.name',
  },
  tag: {
    select: 'r.tag AS "group", k.id AS keyId, k.prefix AS prefix, k.name AS key',
    group: 'GROUP BY r.key_id, r.tag',
    order: 'ORDER BY costMicros DESC, r.tag, k.name',
  },
};

/** The rollup a grouping reads: end users and tags have their own (src/endusers). */
function rollupOf(by: SpendGrouping): string {
  return by === 'user' ? 'rollups_end_users' : by === 'tag' ? 'rollups_tags' : 'rollups_daily';
}

/** The totals' counters, for sums and differences in code. */
export const SPEND_COUNTERS = [
  'requests',
  'promptTokens',
  'cachedTokens',
  'completionTokens',
  'reasoningTokens',
  'costMicros',
  'errors',
  'rejectedRateLimit',
  'rejectedBudget',
] as const;

/** Spend over a range of UTC days, grouped as asked, with the grand total. */
export function querySpend(database: TollgateDatabase, query: SpendQuery, now = Date.now()): SpendReport {
  const until = query.until ?? calendarDay(now);
  const where = ['r.day >= @since', 'r.day <= @until'];
  if (query.keyId !== undefined) where.push('r.key_id = @keyId');
  if (query.tenantId !== undefined) where.push('k.tenant_id = @tenantId');
  const params = { since: query.since, until, keyId: query.keyId, tenantId: query.tenantId };
  const fromOf = (table: string) => `FROM ${table} r JOIN api_keys k ON k.id = r.key_id LEFT JOIN tenants t ON t.id = k.tenant_id WHERE ${where.join(' AND ')}`;
  const from = fromOf('rollups_daily');
  const shape = GROUP_COLUMNS[query.by];
  const limit = query.limit === undefined ? '' : `LIMIT ${Math.max(0, Math.floor(query.limit))}`;
  const rows = database.sqlite
    .prepare(`SELECT ${shape.select}, ${SUMS} ${fromOf(rollupOf(query.by))} ${shape.group} ${shape.order} ${limit}`)
    .all(params) as SpendRow[];
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
  // By end user, the requests that named none are one more row, so the rows sum to the total
  // (both sides move in the same transactions). Tags need not: a request may carry several.
  if (query.by === 'user' && query.limit === undefined) {
    const rest = difference(total, rows);
    if (SPEND_COUNTERS.some((counter) => rest[counter] !== 0)) rows.push({ group: NO_END_USER, ...rest });
  }
  return { since: query.since, until, by: query.by, rows: query.by === 'total' ? [] : rows, total, pending: pending.n };
}

/** `total` less the sum of `rows`, counter by counter. */
export function difference(total: SpendTotals, rows: readonly SpendTotals[]): SpendTotals {
  const rest = { ...total } as Record<(typeof SPEND_COUNTERS)[number], number>;
  for (const row of rows) for (const counter of SPEND_COUNTERS) rest[counter] -= row[counter];
  return rest;
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
