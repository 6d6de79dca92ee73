/**
 * Spend from PostgreSQL's rollups, for replicas: the same report, from the
 * same kind of rows, as ../sqlite/spend-reads.ts reads from SQLite — every node's requests
 * once they are shipped (src/storage/postgres/shipper.ts).
 *
 * Fewer rows than SQLite's reads, for a ledger of every node (bench/pg-scale.ts):
 * days over every key come from the all-keys daily rollup, and each whole
 * month of the range from the monthly rollup instead of its ~30 daily rows
 * per key and model (a month is whole when the range covers all its days, or
 * all its days that have rows).
 *
 * Pages as on SQLite (a `limit` and the cursor of ../spend-cursor.ts): the
 * grouping runs in PostgreSQL, and only a page of rows comes back.
 */
import type { PgPool } from './open.js';
import { addDays, dayEndMs, dayStartMs, monthStartOf } from '../../domain/calendar.js';
import { encodeSpendCursor, type CursorScope, type SpendPosition } from '../spend-cursor.js';
import { difference, pageOf, SPEND_COUNTERS, splitSortValues, type SortedRow } from '../spend-page.js';
import { sessionRowsSql } from '../session-spend.js';
import { NO_END_USER, type SpendQuery, type SpendReads, type SpendReport, type SpendRow, type SpendTotals } from '../spend-reads.js';

const SUMS = `coalesce(sum(r.requests), 0) AS "requests",
  coalesce(sum(r.prompt_tokens), 0) AS "promptTokens",
  coalesce(sum(r.cached_tokens), 0) AS "cachedTokens",
  coalesce(sum(r.completion_tokens), 0) AS "completionTokens",
  coalesce(sum(r.reasoning_tokens), 0) AS "reasoningTokens",
  coalesce(sum(r.cost_micros), 0) AS "costMicros",
  coalesce(sum(r.errors), 0) AS "errors",
  coalesce(sum(r.rejected_rate_limit), 0) AS "rejectedRateLimit",
  coalesce(sum(r.rejected_budget), 0) AS "rejectedBudget"`;

/** Each grouping's columns and its sort values `_name`, `_id`, as on SQLite (the same order, so the same cursors). */
const GROUP_COLUMNS: Record<Exclude<SpendQuery['by'], 'user' | 'tag' | 'session'>, { select: string; group: string }> = {
  day: { select: `r.day AS "group", r.day AS _name, '' AS _id`, group: 'GROUP BY r.day' },
  model: { select: `r.model AS "group", r.model AS _name, '' AS _id`, group: 'GROUP BY r.model' },
  key: { select: 'k.name AS "group", k.id AS "keyId", k.prefix AS "prefix", k.name AS _name, k.id AS _id', group: 'GROUP BY k.id' },
  tenant: {
    select: `coalesce(t.name, '(no tenant)') AS "group", coalesce(t.name, '(no tenant)') AS _name, coalesce(k.tenant_id, '') AS _id`,
    group: 'GROUP BY k.tenant_id, t.name',
  },
  total: { select: `'total' AS "group", '' AS _name, '' AS _id`, group: '' },
};

/** A page of what `grouped` selects: the rows after `position` in the report's order, one more than `limit`. */
async function readPage(
  pool: PgPool,
  grouped: string,
  params: unknown[],
  byDay: boolean,
  position: SpendPosition | undefined,
  limit: number | undefined,
): Promise<SortedRow[]> {
  if (position !== undefined && 'rest' in position) return [];
  const values = [...params];
  let after = '';
  if (position !== undefined) {
    if (byDay) {
      values.push(position.after.name);
      after = `WHERE g._name COLLATE "C" > $${values.length}::text`;
    } else {
      values.push(-position.after.cost, position.after.name, position.after.id);
      after = `WHERE (-g."costMicros", g._name COLLATE "C", g._id COLLATE "C") > ($${values.length - 2}::numeric, $${values.length - 1}::text, $${values.length}::text)`;
    }
  }
  // Text sort values compare byte by byte (COLLATE "C"), as SQLite's do: the same order, the same cursors.
  const order = byDay ? 'g._name COLLATE "C"' : 'g."costMicros" DESC, g._name COLLATE "C", g._id COLLATE "C"';
  const cap = limit === undefined ? '' : `LIMIT ${Math.max(0, Math.floor(limit)) + 1}`;
  return (await pool.query<SortedRow>(`SELECT * FROM (${grouped}) g ${after} ORDER BY ${order} ${cap}`, values)).rows;
}

/** The page's rows without their sort values, whether more follow, and the cursor of the next page. */
function pageRows(sorted: SortedRow[], limit: number | undefined, scope: CursorScope): { rows: SpendRow[]; hasMore: boolean; nextCursor: string | null } {
  const hasMore = limit !== undefined && sorted.length > limit;
  if (hasMore) sorted.length = limit;
  const rows = sorted.map((row) => splitSortValues(row).row);
  return { rows, hasMore, nextCursor: hasMore ? encodeSpendCursor(scope, splitSortValues(sorted[sorted.length - 1]!).position) : null };
}

const COUNTER_COLUMNS =
  'key_id, model, requests, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, cost_micros, errors, rejected_rate_limit, rejected_budget';

/** The last day of `day`'s month. */
function monthEndOf(day: string): string {
  return addDays(`${addDays(monthStartOf(day), 32).slice(0, 7)}-01`, -1);
}

/**
 * The rollup rows of [since, until] as one relation of (key_id, model,
 * counters): whole months from rollups_monthly, the days around them from
 * rollups_daily. `$1`/`$2` are since/until; the rest are appended to `params`.
 */
async function rangeRows(pool: PgPool, since: string, until: string, params: unknown[]): Promise<string> {
  const firstWhole = since === monthStartOf(since) ? since : addDays(monthEndOf(since), 1);
  let lastWhole = monthEndOf(until) === until ? until : addDays(monthStartOf(until), -1);
  if (lastWhole < until && firstWhole <= until) {
    // The month of `until` is whole too when none of its later days has rows (normally: `until` is today).
    const later = await pool.query('SELECT 1 FROM rollups_daily WHERE day > $1 AND day <= $2 LIMIT 1', [until, monthEndOf(until)]);
    if (later.rows.length === 0) lastWhole = monthEndOf(until);
  }
  if (firstWhole > lastWhole || firstWhole > until) return `(SELECT ${COUNTER_COLUMNS} FROM rollups_daily WHERE day >= $1 AND day <= $2)`;
  params.push(firstWhole.slice(0, 7), lastWhole.slice(0, 7), firstWhole, lastWhole);
  const n = params.length;
  return `(SELECT ${COUNTER_COLUMNS} FROM rollups_monthly WHERE month >= $${n - 3} AND month <= $${n - 2}
    UNION ALL SELECT ${COUNTER_COLUMNS} FROM rollups_daily WHERE day >= $1 AND day <= $2 AND (day < $${n - 1} OR day > $${n}))`;
}

/** Spend over a range of UTC days, grouped as asked, with the grand total (see ../spend-reads.ts). */
export async function queryPgSpend(pool: PgPool, query: SpendQuery, now = Date.now()): Promise<SpendReport> {
  const page = pageOf(query, now);
  const { until } = page;
  if (query.by === 'user' || query.by === 'tag' || query.by === 'session') return queryByAttribution(pool, { ...query, by: query.by }, page);
  if (query.by !== 'day' && query.since <= until) return queryByMonths(pool, { ...query, by: query.by }, page);
  const params: unknown[] = [query.since, until];
  const where = ['r.day >= $1', 'r.day <= $2'];
  if (query.keyId !== undefined) {
    params.push(query.keyId);
    where.push(`r.key_id = $${params.length}`);
  }
  if (query.tenantId !== undefined) {
    params.push(query.tenantId);
    where.push(`k.tenant_id = $${params.length}`);
  }
  const from = `FROM rollups_daily r JOIN api_keys k ON k.id = r.key_id LEFT JOIN tenants t ON t.id = k.tenant_id WHERE ${where.join(' AND ')}`;
  const shape = GROUP_COLUMNS[query.by];
  // Days over every key: one row a day of the all-keys rollup, no join (every rollup row belongs to a key: keys are never deleted).
  const allKeys = query.keyId === undefined && query.tenantId === undefined;
  const rowsSql = allKeys
    ? `SELECT r.day AS "group", r.day AS _name, '' AS _id, ${SUMS} FROM rollups_daily_total r WHERE r.day >= $1 AND r.day <= $2 GROUP BY r.day`
    : `SELECT ${shape.select}, ${SUMS} ${from} ${shape.group}`;
  const sorted = await readPage(pool, rowsSql, allKeys ? [query.since, until] : params, true, page.position, query.limit);
  const totalSql = allKeys ? `SELECT ${SUMS} FROM rollups_daily_total r WHERE r.day >= $1 AND r.day <= $2` : `SELECT ${SUMS} ${from}`;
  const total = (await pool.query<SpendTotals>(totalSql, allKeys ? [query.since, until] : params)).rows[0]!;
  return { since: query.since, until, by: query.by, ...pageRows(sorted, query.limit, page.scope), total, pending: await pendingCount(pool, query, until) };
}

/** The range and page of a query (../spend-page.ts's pageOf). */
type Page = ReturnType<typeof pageOf>;

/** Grouped by model, key, tenant or not at all: whole months read from the monthly rollup (see the header). */
async function queryByMonths(pool: PgPool, query: SpendQuery & { by: keyof typeof GROUP_COLUMNS }, page: Page): Promise<SpendReport> {
  const { until } = page;
  const params: unknown[] = [query.since, until];
  const source = await rangeRows(pool, query.since, until, params);
  const where: string[] = [];
  if (query.keyId !== undefined) {
    params.push(query.keyId);
    where.push(`r.key_id = $${params.length}`);
  }
  if (query.tenantId !== undefined) {
    params.push(query.tenantId);
    where.push(`k.tenant_id = $${params.length}`);
  }
  const from = `FROM ${source} r JOIN api_keys k ON k.id = r.key_id LEFT JOIN tenants t ON t.id = k.tenant_id${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`;
  const shape = GROUP_COLUMNS[query.by];
  const sorted =
    query.by === 'total' ? [] : await readPage(pool, `SELECT ${shape.select}, ${SUMS} ${from} ${shape.group}`, params, false, page.position, query.limit);
  const allKeys = query.keyId === undefined && query.tenantId === undefined;
  const whole = query.limit === undefined && page.position === undefined;
  const total = allKeys
    ? (await pool.query<SpendTotals>(`SELECT ${SUMS} FROM rollups_daily_total r WHERE r.day >= $1 AND r.day <= $2`, [query.since, until])).rows[0]!
    : query.by === 'total' || !whole
      ? (await pool.query<SpendTotals>(`SELECT ${SUMS} ${from}`, params)).rows[0]!
      : sumRows(sorted);
  return { since: query.since, until, by: query.by, ...pageRows(sorted, query.limit, page.scope), total, pending: await pendingCount(pool, query, until) };
}

/** What the end-user and tag groupings read: their own daily rollups (src/endusers), per key; sessions, the range's ledger rows. */
const ATTRIBUTED = {
  user: { table: () => 'rollups_end_users', column: 'end_user', extra: '' },
  tag: { table: () => 'rollups_tags', column: 'tag', extra: '' },
  session: {
    table: (since: string, until: string) => sessionRowsSql('$1::text', dayStartMs(since), dayEndMs(until)),
    column: 'session',
    extra: ', min(r.created_at) AS "firstAt", max(r.created_at) AS "lastAt"',
  },
} as const;

/**
 * Grouped by end user or tag, as ../sqlite/spend-reads.ts does from SQLite: one row per key
 * and name (with the key's id, prefix and name), the most spent first, at
 * most `limit`; the total is the key's (or every key's) whole spend, and by
 * end user the requests that named none are one more row, so the rows sum to
 * the total (a request may carry several tags, so tags need not).
 */
async function queryByAttribution(pool: PgPool, query: SpendQuery & { by: 'user' | 'tag' | 'session' }, page: Page): Promise<SpendReport> {
  const { until } = page;
  const { column, extra } = ATTRIBUTED[query.by];
  const table = ATTRIBUTED[query.by].table(query.since, until);
  const params: unknown[] = [query.since, until];
  const where = ['r.day >= $1', 'r.day <= $2'];
  if (query.keyId !== undefined) {
    params.push(query.keyId);
    where.push(`r.key_id = $${params.length}`);
  }
  if (query.tenantId !== undefined) {
    params.push(query.tenantId);
    where.push(`k.tenant_id = $${params.length}`);
  }
  const from = `FROM ${table} r JOIN api_keys k ON k.id = r.key_id WHERE ${where.join(' AND ')}`;
  const sorted = await readPage(
    pool,
    `SELECT r.${column} AS "group", k.id AS "keyId", k.prefix AS "prefix", k.name AS "key", r.${column} AS _name, r.key_id AS _id${extra}, ${SUMS}
     ${from} GROUP BY r.key_id, r.${column}, k.id`,
    params,
    false,
    page.position,
    query.limit,
  );
  let { rows, hasMore, nextCursor } = pageRows(sorted, query.limit, page.scope);
  // The whole spend of the same keys, from the rollups the other groupings read (whole months from the monthly one).
  const { total, pending } = await queryByMonths(pool, { ...query, by: 'total', limit: undefined, cursor: undefined }, { ...page, position: undefined });
  if (query.by === 'user' && !hasMore && query.namedOnly !== true) {
    const named = (await pool.query<SpendTotals>(`SELECT ${SUMS} ${from}`, params)).rows[0]!;
    const rest = difference(total, [named]);
    if (SPEND_COUNTERS.some((counter) => rest[counter] !== 0)) {
      if (query.limit !== undefined && rows.length >= query.limit) {
        hasMore = true;
        nextCursor = encodeSpendCursor(page.scope, { rest: true });
      } else rows = [...rows, { group: NO_END_USER, ...rest }];
    }
  }
  return { since: query.since, until, by: query.by, rows, total, pending, hasMore, nextCursor };
}

/** The grand total of grouped rows (each row a disjoint part of the range's rows). */
/** Requests of the range (and key or tenant) still in flight, counted at their estimate in the totals. */
async function pendingCount(pool: PgPool, query: SpendQuery, until: string): Promise<number> {
  const params: unknown[] = [dayStartMs(query.since), dayEndMs(until)];
  const where = ["l.status = 'pending'", 'l.created_at >= $1', 'l.created_at < $2'];
  if (query.keyId !== undefined) {
    params.push(query.keyId);
    where.push(`l.key_id = $${params.length}`);
  }
  if (query.tenantId !== undefined) {
    params.push(query.tenantId);
    where.push(`l.tenant_id = $${params.length}`);
  }
  return (await pool.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM ledger l WHERE ${where.join(' AND ')}`, params)).rows[0]!.n;
}

function sumRows(rows: readonly SpendTotals[]): SpendTotals {
  const total = {
    requests: 0,
    promptTokens: 0,
    cachedTokens: 0,
    completionTokens: 0,
    reasoningTokens: 0,
    costMicros: 0,
    errors: 0,
    rejectedRateLimit: 0,
    rejectedBudget: 0,
  };
  for (const row of rows) for (const name of Object.keys(total) as Array<keyof SpendTotals>) total[name] += row[name];
  return total;
}

/** Spend reports from PostgreSQL's rollups: every node's shipped spend. */
export function postgresSpendReads(pool: PgPool): SpendReads {
  return { spend: (query, now) => queryPgSpend(pool, query, now) };
}
