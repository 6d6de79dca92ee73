/**
 * The dashboard's reads on a replica (TOLLGATE_DATABASE_URL): the same
 * numbers as ../sqlite/dashboard-reads.ts, read from PostgreSQL's copy of the same tables, so
 * every node shows every node's keys and spend — what the nodes have shipped
 * (src/storage/postgres/shipper.ts; normally a few hundred ms behind, longer while
 * PostgreSQL was away). Each page's reads go out together (the view builders
 * await them at once) on the node's small pool; every read uses the index
 * or rollup its SQLite twin uses (../sqlite/dashboard-reads.ts says which).
 *
 * PostgreSQL unreachable: the page answers 503 `ledger_unavailable` rather
 * than a node's partial local view, which would look complete and be wrong.
 */
import type pg from 'pg';
import type { PgPool } from './open.js';
import { pgUnavailable } from '../../domain/errors.js';
import { queryPgSpend } from './spend-reads.js';
import type { SpendQuery, SpendReport, SpendTotals } from '../spend-reads.js';
import { addDays, dayEndMs, dayStartMs, monthStartOf, calendarDay, periodStart } from '../../domain/calendar.js';
import { DirectoryCache, KEY_VERSIONS_SQL, type Directory, type StoredKeyRow, type StoredTenantRow } from '../directory.js';
import {
  addTotals,
  byKey,
  CHART_DAYS,
  chartHours,
  daysUntil,
  hoursFrom,
  pickTotals,
  requestPage,
  topPage,
  withPending,
  ZERO_TOTALS,
} from '../dashboard-figures.js';
import type { DashboardReads, DayPoint, HourPoint, KeySpend, Page, PeriodTotals, RequestRow, SpendByKey, TopRow } from '../dashboard-reads.js';
import { decodeRequestCursor } from '../request-cursor.js';

const SUMS = `coalesce(sum(requests), 0) AS "requests", coalesce(sum(prompt_tokens), 0) AS "promptTokens",
  coalesce(sum(cached_tokens), 0) AS "cachedTokens", coalesce(sum(completion_tokens), 0) AS "completionTokens",
  coalesce(sum(reasoning_tokens), 0) AS "reasoningTokens", coalesce(sum(cost_micros), 0) AS "costMicros",
  coalesce(sum(errors), 0) AS "errors", coalesce(sum(rejected_rate_limit), 0) AS "rejectedRateLimit",
  coalesce(sum(rejected_budget), 0) AS "rejectedBudget"`;

const REQUEST_COLUMNS = `request_id AS "requestId", created_at AS "createdAt", endpoint, model, stream, status, http_status AS "httpStatus",
  coalesce(prompt_tokens, est_prompt_tokens) AS "promptTokens", coalesce(completion_tokens, est_completion_tokens) AS "completionTokens",
  coalesce(cost_micros, est_cost_micros) AS "costMicros", latency_ms AS "latencyMs", error_code AS "errorCode"`;

const HOUR_COLUMNS = `hour, sum(requests) AS "requests", sum(prompt_tokens) AS "promptTokens", sum(completion_tokens) AS "completionTokens",
  sum(cost_micros) AS "costMicros", sum(rejected_rate_limit) AS "rejectedRateLimit", sum(rejected_budget) AS "rejectedBudget"`;

const TENANT_HOUR_COLUMNS = `r.hour, sum(r.requests) AS "requests", sum(r.prompt_tokens) AS "promptTokens",
  sum(r.completion_tokens) AS "completionTokens", sum(r.cost_micros) AS "costMicros", sum(r.rejected_rate_limit) AS "rejectedRateLimit",
  sum(r.rejected_budget) AS "rejectedBudget"`;

/** A failed read as the dashboard's 503 (the cause goes to the log, never to the page). */
async function guard<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw pgUnavailable('The dashboard reads', error);
  }
}

/** The dashboard's reads over PostgreSQL. */
export class PostgresDashboardReads implements DashboardReads {
  private readonly pool: PgPool;
  private readonly directoryCache = new DirectoryCache();

  constructor(pool: PgPool) {
    this.pool = pool;
  }

  private async rows<T>(text: string, values: unknown[]): Promise<T[]> {
    return guard(async () => (await this.pool.query<T & pg.QueryResultRow>(text, values)).rows);
  }

  /** Rows as arrays: a third cheaper than objects for a thousand keys (as on SQLite). */
  private async arrays<T extends unknown[]>(text: string, values: unknown[]): Promise<T[]> {
    return guard(async () => (await this.pool.query<T>({ text, values, rowMode: 'array' })).rows);
  }

  private spend(query: SpendQuery, now: number): Promise<SpendReport> {
    return guard(() => queryPgSpend(this.pool, query, now));
  }

  async directory(): Promise<Directory> {
    const [versions] = await this.rows<{ keys: number; tenants: number }>(KEY_VERSIONS_SQL, []);
    const signature = `${versions!.keys}:${versions!.tenants}`;
    const current = this.directoryCache.current(signature);
    if (current !== undefined) return current;
    // Byte order ("C"), as SQLite's default collation sorts names.
    const [keys, tenants] = await Promise.all([
      this.rows<StoredKeyRow>(
        `SELECT k.id, k.name, k.tenant_id AS "tenantId", t.name AS tenant, k.prefix, k.created_at AS "createdAt",
           k.revoked_at AS "revokedAt", k.expires_at AS "expiresAt", k.suspended_at AS "suspendedAt", k.policy
         FROM api_keys k LEFT JOIN tenants t ON t.id = k.tenant_id ORDER BY k.name COLLATE "C", k.created_at`,
        [],
      ),
      this.rows<StoredTenantRow>('SELECT id, name, policy FROM tenants ORDER BY name COLLATE "C"', []),
    ]);
    return this.directoryCache.build(signature, keys, tenants);
  }

  async spendByKey(now: number): Promise<SpendByKey> {
    const today = calendarDay(now);
    const monthStart = monthStartOf(today);
    const nextMonth = `${addDays(monthStart, 32).slice(0, 7)}-01`;
    const [todayReport, monthDays, pending, later, monthRows, weekRows, lifetimeRows] = await Promise.all([
      this.spend({ since: today, until: today, by: 'key' }, now),
      this.rows<SpendTotals>(`SELECT ${SUMS} FROM rollups_daily_total WHERE day >= $1 AND day <= $2`, [monthStart, today]),
      // Through the partial index on pending rows.
      this.arrays<[number]>(`SELECT count(*) FROM ledger WHERE status = 'pending' AND created_at >= $1 AND created_at < $2`, [
        dayStartMs(monthStart),
        dayEndMs(today),
      ]),
      // Days filed after today (normally none), through rollups_daily_day.
      this.rows<{ keyId: string; inMonth: boolean; costMicros: number }>(
        `SELECT key_id AS "keyId", day < $1 AS "inMonth", sum(cost_micros) AS "costMicros" FROM rollups_daily WHERE day > $2 GROUP BY key_id, day < $1`,
        [nextMonth, today],
      ),
      // A range of the primary key, which starts with the month.
      this.arrays<[string, number, number]>('SELECT key_id, sum(requests), sum(cost_micros) FROM rollups_monthly WHERE month = $1 GROUP BY key_id', [
        today.slice(0, 7),
      ]),
      this.arrays<[string, number]>('SELECT key_id, sum(cost_micros) FROM rollups_daily WHERE day >= $1 AND day <= $2 GROUP BY key_id', [
        periodStart('week', now),
        today,
      ]),
      this.arrays<[string, number, number]>('SELECT key_id, cost_micros, last_request_at FROM rollups_lifetime', []),
    ]);

    const laterThisMonth = new Set(later.filter((row) => row.inMonth).map((row) => row.keyId));
    const monthByKey = new Map<string, KeySpend>();
    for (const [keyId, requests, costMicros] of monthRows) if (!laterThisMonth.has(keyId)) monthByKey.set(keyId, { requests, costMicros });
    await Promise.all(
      [...laterThisMonth].map(async (keyId) => {
        const row = (await this.spend({ keyId, since: monthStart, until: today, by: 'key' }, now)).rows[0];
        if (row !== undefined) monthByKey.set(keyId, { requests: row.requests, costMicros: row.costMicros });
      }),
    );
    const lifetimeCostByKey = new Map<string, number>();
    const lastRequestAtByKey = new Map<string, number>();
    for (const [keyId, costMicros, lastRequestAt] of lifetimeRows) {
      lifetimeCostByKey.set(keyId, costMicros);
      lastRequestAtByKey.set(keyId, lastRequestAt);
    }
    for (const row of later) lifetimeCostByKey.set(row.keyId, (lifetimeCostByKey.get(row.keyId) ?? 0) - row.costMicros);
    return {
      today,
      monthStart,
      todayTotal: withPending(todayReport.total, todayReport.pending),
      monthTotal: withPending(addTotals(ZERO_TOTALS, monthDays[0] ?? ZERO_TOTALS), pending[0]?.[0] ?? 0),
      todayByKey: byKey(todayReport),
      monthByKey,
      weekCostByKey: new Map(weekRows),
      lifetimeCostByKey,
      lastRequestAtByKey,
    };
  }

  async keyLifetimeCost(keyId: string, now: number): Promise<number> {
    const [lifetime, after] = await Promise.all([
      this.arrays<[number]>('SELECT cost_micros FROM rollups_lifetime WHERE key_id = $1', [keyId]),
      this.arrays<[number]>('SELECT coalesce(sum(cost_micros), 0) FROM rollups_daily WHERE key_id = $1 AND day > $2', [keyId, calendarDay(now)]),
    ]);
    return (lifetime[0]?.[0] ?? 0) - (after[0]?.[0] ?? 0);
  }

  async dailySeries(now: number): Promise<DayPoint[]> {
    const today = calendarDay(now);
    const rows = await this.rows<SpendTotals & { day: string }>(`SELECT day, ${SUMS} FROM rollups_daily_total WHERE day >= $1 AND day <= $2 GROUP BY day`, [
      addDays(today, -(CHART_DAYS - 1)),
      today,
    ]);
    return daysUntil(today, new Map(rows.map((row) => [row.day, pickTotals(row)])));
  }

  async keyDailySeries(keyId: string, now: number): Promise<DayPoint[]> {
    const today = calendarDay(now);
    const { rows } = await this.spend({ keyId, since: addDays(today, -(CHART_DAYS - 1)), until: today, by: 'day' }, now);
    return daysUntil(today, new Map(rows.map((row) => [row.group, pickTotals(row)])));
  }

  async hourlySeries(now: number, keyId?: string): Promise<HourPoint[]> {
    const { first, last } = chartHours(now);
    const rows =
      keyId === undefined
        ? await this.rows<HourPoint>(`SELECT ${HOUR_COLUMNS} FROM rollups_hourly WHERE hour >= $1 AND hour <= $2 GROUP BY hour`, [first, last])
        : await this.rows<HourPoint>(`SELECT ${HOUR_COLUMNS} FROM rollups_hourly WHERE key_id = $1 AND hour >= $2 AND hour <= $3 GROUP BY hour`, [
            keyId,
            first,
            last,
          ]);
    return hoursFrom(first, last, rows);
  }

  async tenantTotals(tenantId: string, since: string, now: number): Promise<PeriodTotals> {
    const report = await this.spend({ tenantId, since, by: 'total' }, now);
    return withPending(report.total, report.pending);
  }

  async tenantDailySeries(tenantId: string, now: number): Promise<DayPoint[]> {
    const today = calendarDay(now);
    const { rows } = await this.spend({ tenantId, since: addDays(today, -(CHART_DAYS - 1)), until: today, by: 'day' }, now);
    return daysUntil(today, new Map(rows.map((row) => [row.group, pickTotals(row)])));
  }

  /** The tenant's keys through api_keys_tenant, each key's hours through the rollup's primary key (as on SQLite). */
  async tenantHourlySeries(tenantId: string, now: number): Promise<HourPoint[]> {
    const { first, last } = chartHours(now);
    const rows = await this.rows<HourPoint>(
      `SELECT ${TENANT_HOUR_COLUMNS} FROM api_keys k JOIN rollups_hourly r ON r.key_id = k.id AND r.hour >= $1 AND r.hour <= $2
       WHERE k.tenant_id = $3 GROUP BY r.hour`,
      [first, last, tenantId],
    );
    return hoursFrom(first, last, rows);
  }

  async keyTotals(keyId: string, since: string, now: number): Promise<PeriodTotals> {
    const report = await this.spend({ keyId, since, by: 'total' }, now);
    return withPending(report.total, report.pending);
  }

  async keyModels(keyId: string, since: string, now: number): Promise<Array<{ model: string; totals: SpendTotals }>> {
    return (await this.spend({ keyId, since, by: 'model' }, now)).rows.map((row) => ({ model: row.group, totals: pickTotals(row) }));
  }

  /** From rollups_end_users / rollups_tags by their key, as SQLite does from its own's (a page, in the same order). */
  async keyTop(keyId: string, by: 'user' | 'tag' | 'session', since: string, now: number, limit: number, cursor?: string): Promise<Page<TopRow>> {
    return topPage(await this.spend({ keyId, since, by, limit, cursor, namedOnly: true }, now));
  }

  /** Through ledger_key_time, newest first (request ids in byte order, as SQLite's). */
  latestRequests(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    return this.requests(keyId, limit, cursor, 'requests');
  }

  /** Through the partial index ledger_key_429. */
  recent429s(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    return this.requests(keyId, limit, cursor, '429');
  }

  private async requests(keyId: string, limit: number, cursor: string | undefined, list: 'requests' | '429'): Promise<Page<RequestRow>> {
    const values: unknown[] = [keyId, limit + 1];
    const where = ['key_id = $1'];
    if (list === '429') where.push('http_status = 429');
    if (cursor !== undefined) {
      const from = decodeRequestCursor(cursor, { keyId, list });
      values.push(from.createdAt, from.requestId);
      where.push('(created_at, request_id COLLATE "C") < ($3::bigint, $4::text)');
    }
    const rows = await this.rows<RequestRow>(
      `SELECT ${REQUEST_COLUMNS} FROM ledger WHERE ${where.join(' AND ')} ORDER BY created_at DESC, request_id COLLATE "C" DESC LIMIT $2`,
      values,
    );
    return requestPage(rows, limit, keyId, list);
  }
}
