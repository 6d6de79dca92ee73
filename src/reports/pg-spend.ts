/**
 * Spend from PostgreSQL's rollups, for replicas: the same report, from the
 * same kind of rows, as spend.ts reads from SQLite — every node's requests
 * once they are shipped (src/ledger/shipper.ts).
 */
import type { PgPool } from '../db/pg.js';
import { TollgateError } from '../errors.js';
import { calendarDay, dayEndMs, dayStartMs } from '../calendar.js';
import type { SpendQuery, SpendReport, SpendRow, SpendTotals } from './spend.js';

const SUMS = `coalesce(sum(r.requests), 0) AS "requests",
  coalesce(sum(r.prompt_tokens), 0) AS "promptTokens",
  coalesce(sum(r.cached_tokens), 0) AS "cachedTokens",
  coalesce(sum(r.completion_tokens), 0) AS "completionTokens",
  coalesce(sum(r.reasoning_tokens), 0) AS "reasoningTokens",
  coalesce(sum(r.cost_micros), 0) AS "costMicros",
  coalesce(sum(r.errors), 0) AS "errors",
  coalesce(sum(r.rejected_rate_limit), 0) AS "rejectedRateLimit",
  coalesce(sum(r.rejected_budget), 0) AS "rejectedBudget"`;

const GROUP_COLUMNS: Record<Exclude<SpendQuery['by'], 'user' | 'tag'>, { select: string; group: string; order: string }> = {
  day: { select: 'r.day AS "group"', group: 'GROUP BY r.day', order: 'ORDER BY r.day' },
  model: { select: 'r.model AS "group"', group: 'GROUP BY r.model', order: 'ORDER BY "costMicros" DESC, r.model' },
  key: { select: 'k.name AS "group", k.id AS "keyId", k.prefix AS "prefix"', group: 'GROUP BY k.id', order: 'ORDER BY "costMicros" DESC, k.name' },
  tenant: { select: `coalesce(t.name, '(no tenant)') AS "group"`, group: 'GROUP BY k.tenant_id, t.name', order: 'ORDER BY "costMicros" DESC' },
  total: { select: `'total' AS "group"`, group: '', order: '' },
};

/** Spend over a range of UTC days, grouped as asked, with the grand total (see spend.ts). */
export async function queryPgSpend(pool: PgPool, query: SpendQuery, now = Date.now()): Promise<SpendReport> {
  if (query.by === 'user' || query.by === 'tag') {
    // PostgreSQL has no end-user or tag rollups yet (src/endusers): say so rather than answer wrongly.
    throw new TollgateError('invalid_value', `Spend by ${query.by} is not available on replicas (TOLLGATE_DATABASE_URL) yet; ask a node's own database.`, {
      param: 'by',
    });
  }
  const until = query.until ?? calendarDay(now);
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
  const rows = query.by === 'total' ? [] : (await pool.query<SpendRow>(`SELECT ${shape.select}, ${SUMS} ${from} ${shape.group} ${shape.order}`, params)).rows;
  const totalSql =
    query.keyId === undefined && query.tenantId === undefined
      ? `SELECT ${SUMS} FROM rollups_daily_total r WHERE r.day >= $1 AND r.day <= $2`
      : `SELECT ${SUMS} ${from}`;
  const total = (await pool.query<SpendTotals>(totalSql, query.keyId === undefined && query.tenantId === undefined ? [query.since, until] : params)).rows[0]!;
  const pendingParams: unknown[] = [dayStartMs(query.since), dayEndMs(until)];
  const pendingWhere = ["l.status = 'pending'", 'l.created_at >= $1', 'l.created_at < $2'];
  if (query.keyId !== undefined) {
    pendingParams.push(query.keyId);
    pendingWhere.push(`l.key_id = $${pendingParams.length}`);
  }
  if (query.tenantId !== undefined) {
    pendingParams.push(query.tenantId);
    pendingWhere.push(`l.tenant_id = $${pendingParams.length}`);
  }
  const pending = (await pool.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM ledger l WHERE ${pendingWhere.join(' AND ')}`, pendingParams)).rows[0]!;
  return { since: query.since, until, by: query.by, rows, total, pending: pending.n };
}
