/**
 * Spend reports from a node's SQLite file (../spend-reads.ts): totals come
 * from the daily rollups (never a scan of ledger rows; over every key, from
 * the all-keys daily rollup), in-flight counts from the ledger's small
 * partial index on pending rows. Days are UTC calendar days.
 *
 * A report is read in pages when it is given a `limit` (the admin API and the
 * CLI always do: ../spend-cursor.ts); only the proxy's own reads of a few rows
 * (the dashboard's per-key and per-day sums) read every row at once.
 *
 * better-sqlite3 answers synchronously: in the proxy these reads run on the
 * read worker (read-worker.ts), never on the event loop the requests share.
 */
import type { TollgateDatabase } from './open.js';
import { dayEndMs, dayStartMs } from '../../domain/calendar.js';
import { encodeSpendCursor } from '../spend-cursor.js';
import { difference, pageOf, SPEND_COUNTERS, splitSortValues, type SortedRow } from '../spend-page.js';
import { NO_END_USER, type SpendGrouping, type SpendQuery, type SpendReads, type SpendReport, type SpendTotals } from '../spend-reads.js';
import type { ReadWorker } from './read-worker.js';
import { sessionRowsSql } from '../session-spend.js';

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
  session: {
    select:
      'r.session AS "group", k.id AS keyId, k.prefix AS prefix, k.name AS key, min(r.created_at) AS firstAt, max(r.created_at) AS lastAt, r.session AS _name, r.key_id AS _id',
    group: 'GROUP BY r.key_id, r.session',
  },
};

/** The rollup a grouping reads: end users and tags have their own (src/endusers); sessions, the period's ledger rows. */
function rollupOf(by: SpendGrouping, since: string, until: string): string {
  if (by === 'session') return sessionRowsSql('@since', dayStartMs(since), dayEndMs(until));
  return by === 'user' ? 'rollups_end_users' : by === 'tag' ? 'rollups_tags' : 'rollups_daily';
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
            `SELECT * FROM (SELECT ${shape.select}, ${SUMS} ${fromOf(rollupOf(query.by, query.since, until))} ${shape.group}) g ${after}
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

/** Spend reports answered here, on the caller's thread (the CLI; an in-memory database). */
export function sqliteSpendReads(database: TollgateDatabase): SpendReads {
  return { spend: async (query, now) => querySpend(database, query, now) };
}

/** Spend reports answered by the read worker (the proxy's, over its file). */
export function workerSpendReads(worker: ReadWorker): SpendReads {
  return { spend: (query, now) => worker.call('spend', [query, now]) };
}
