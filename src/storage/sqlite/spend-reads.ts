/**
 * Reading spend: totals come from the daily rollups (never a scan of ledger
 * rows; over every key, from the all-keys daily rollup), in-flight counts
 * from the ledger's small partial index on pending rows. Days are UTC
 * calendar days.
 *
 * A report is read in pages when it is given a `limit` (the admin API and the
 * CLI always do: spend-cursor.ts); only the proxy's own reads of a few rows
 * (the dashboard's per-key and per-day sums) read every row at once.
 */
import type { TollgateDatabase } from './open.js';
import { addDays, calendarDay, dayEndMs, dayStartMs, isCalendarDay, monthStartOf } from '../../domain/calendar.js';
import { decodeSpendCursor, encodeSpendCursor, type CursorScope, type SpendPosition } from '../spend-cursor.js';

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
  /** Rows of this page at most (the most spent first; by day, the earliest first); absent: every row. */
  readonly limit?: number | undefined;
  /** Where the page starts: the previous page's `nextCursor` (spend-cursor.ts). */
  readonly cursor?: string | undefined;
  /** By user: leave out the `(no end user)` row (the dashboard's lists of a key's end users). */
  readonly namedOnly?: boolean | undefined;
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
  /** More rows follow this page: ask again with `cursor` = `nextCursor`. */
  readonly hasMore: boolean;
  readonly nextCursor: string | null;
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

/**
 * Each grouping's columns, and the two values that with its cost order its
 * rows totally (`_name`, `_id`: what a page's cursor holds; spend-cursor.ts).
 * Rows come most spent first, then by name and id; by day, earliest first.
 */
const GROUP_COLUMNS: Record<SpendGrouping, { select: string; group: string }> = {
  day: { select: `r.day AS "group", r.day AS _name, '' AS _id`, group: 'GROUP BY r.day' },
  model: { select: `r.model AS "group", r.model AS _name, '' AS _id`, group: 'GROUP BY r.model' },
  key: { select: 'k.name AS "group", k.id AS keyId, k.prefix AS prefix, k.name AS _name, k.id AS _id', group: 'GROUP BY k.id' },
  tenant: {
    select: `coalesce(t.name, '(no tenant)') AS "group", coalesce(t.name, '(no tenant)') AS _name, coalesce(k.tenant_id, '') AS _id`,
    group: 'GROUP BY k.tenant_id',
  },
  total: { select: `'total' AS "group", '' AS _name, '' AS _id`, group: '' },
  user: {
    select: 'r.end_user AS "group", k.id AS keyId, k.prefix AS prefix, k.name AS key, r.end_user AS _name, r.key_id AS _id',
    group: 'GROUP BY r.key_id, r.end_user',
  },
  tag: {
    select: 'r.tag AS "group", k.id AS keyId, k.prefix AS prefix, k.name AS key, r.tag AS _name, r.key_id AS _id',
    group: 'GROUP BY r.key_id, r.tag',
  },
};

/** A grouped row with its sort values (stripped before it is returned). */
export type SortedRow = SpendRow & { readonly _name: string; readonly _id: string };

/** The row without its sort values, and where a page after it starts. */
export function splitSortValues(row: SortedRow): { row: SpendRow; position: SpendPosition } {
  const { _name, _id, ...rest } = row;
  return { row: rest, position: { after: { cost: Number(row.costMicros), name: _name, id: _id } } };
}

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

/** The day range and page a query reads: `until` from the cursor when it has one, else the query's or today. */
export function pageOf(query: SpendQuery, now: number): { until: string; position: SpendPosition | undefined; scope: CursorScope } {
  const scope = { by: query.by, since: query.since, keyId: query.keyId, tenantId: query.tenantId };
  if (query.cursor === undefined) {
    const until = query.until ?? calendarDay(now);
    return { until, position: undefined, scope: { ...scope, until } };
  }
  const { position, until } = decodeSpendCursor(query.cursor, { ...scope, until: query.until });
  return { until, position, scope: { ...scope, until } };
}

/** Spend over a range of UTC days, grouped as asked, with the grand total: every row, or one page of them. */
export function querySpend(database: TollgateDatabase, query: SpendQuery, now = Date.now()): SpendReport {
  const { until, position, scope } = pageOf(query, now);
  const where = ['r.day >= @since', 'r.day <= @until'];
  if (query.keyId !== undefined) where.push('r.key_id = @keyId');
  if (query.tenantId !== undefined) where.push('k.tenant_id = @tenantId');
  const params: Record<string, unknown> = { since: query.since, until, keyId: query.keyId, tenantId: query.tenantId };
  const fromOf = (table: string) => `FROM ${table} r JOIN api_keys k ON k.id = r.key_id LEFT JOIN tenants t ON t.id = k.tenant_id WHERE ${where.join(' AND ')}`;
  const from = fromOf('rollups_daily');
  const shape = GROUP_COLUMNS[query.by];
  // The page: rows after the cursor's, in the report's order, one more than the limit (to know whether more follow).
  const byDay = query.by === 'day';
  const after =
    position === undefined || 'rest' in position
      ? ''
      : byDay
        ? 'WHERE g._name > @afterName'
        : 'WHERE (-g.costMicros, g._name, g._id) > (@afterCost, @afterName, @afterId)';
  if (position !== undefined && 'after' in position)
    Object.assign(params, { afterCost: -position.after.cost, afterName: position.after.name, afterId: position.after.id });
  const limit = query.limit === undefined ? '' : `LIMIT ${Math.max(0, Math.floor(query.limit)) + 1}`;
  const sorted =
    query.by === 'total' || (position !== undefined && 'rest' in position)
      ? []
      : (database.sqlite
          .prepare(
            `SELECT * FROM (SELECT ${shape.select}, ${SUMS} ${fromOf(rollupOf(query.by))} ${shape.group}) g ${after}
             ORDER BY ${byDay ? 'g._name' : 'g.costMicros DESC, g._name, g._id'} ${limit}`,
          )
          .all(params) as SortedRow[]);
  let hasMore = query.limit !== undefined && sorted.length > query.limit;
  if (hasMore) sorted.length = query.limit!;
  const rows = sorted.map((row) => splitSortValues(row).row);
  let nextCursor = hasMore ? encodeSpendCursor(scope, splitSortValues(sorted[sorted.length - 1]!).position) : null;
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
  // By end user, the requests that named no end user are one more row after all the others, so
  // the rows sum to the total (both sides move in the same transactions). Tags need not: a request
  // may carry several.
  if (query.by === 'user' && !hasMore && query.namedOnly !== true) {
    const named = database.sqlite.prepare(`SELECT ${SUMS} ${fromOf('rollups_end_users')}`).get(params) as SpendTotals;
    const rest = difference(total, [named]);
    if (SPEND_COUNTERS.some((counter) => rest[counter] !== 0)) {
      if (query.limit !== undefined && rows.length >= query.limit) {
        hasMore = true;
        nextCursor = encodeSpendCursor(scope, { rest: true });
      } else rows.push({ group: NO_END_USER, ...rest });
    }
  }
  return { since: query.since, until, by: query.by, rows, total, pending: pending.n, hasMore, nextCursor };
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
