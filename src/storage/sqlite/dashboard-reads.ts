/**
 * The dashboard's reads from a node's SQLite file (../dashboard-reads.ts). Nothing scans the ledger and nothing is summed
 * ahead of time in memory: every number is read from a rollup the ledger
 * writer keeps in the same transaction as the rows (schema.ts), so each read
 * costs about the same on the first request of a process as on the
 * thousandth.
 *
 * - Today, per key and in total: {@link querySpend}, the code of
 *   `tollgate spend`, over today's daily rollups.
 * - Month to date per key: this month's `rollups_monthly` rows. Lifetime per
 *   key (budgets "in total"): `rollups_lifetime`. Both hold every day of
 *   their period, so days filed after today (only a clock set back can file
 *   one; normally there are none) are looked for in the daily rollups: a key
 *   with such days this month is read through querySpend instead, and their
 *   cost is taken off its lifetime. The numbers then equal `tollgate spend`
 *   for the month to date and from the first day, whatever the clock says.
 * - Over every key: `rollups_daily_total`, one row a day (the month's totals
 *   and the 90-day chart).
 * - A key's page: querySpend for that key (a few hundred daily rows at most),
 *   the hourly rollups, and its newest ledger rows through an index.
 *
 * {@link SqliteDashboardReads} prepares its statements once and answers at
 * once inside the promise: in the proxy it runs on the read worker
 * (read-worker.ts), never on the event loop the requests share.
 */
import type { TollgateDatabase } from './open.js';
import { querySpend } from './spend-reads.js';
import type { SpendTotals } from '../spend-reads.js';
import { decodeRequestCursor } from '../request-cursor.js';
import { addDays, calendarDay, dayEndMs, dayStartMs, monthStartOf, periodStart } from '../../domain/calendar.js';
import type { Directory } from '../directory.js';
import { DirectoryReader } from './directory.js';
import type { DashboardReads, DayPoint, HourPoint, KeySpend, Page, PeriodTotals, RequestRow, SpendByKey, TopRow } from '../dashboard-reads.js';
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

/** A row as SQLite returns it (booleans are 0/1). */
type RawRequestRow = Omit<RequestRow, 'stream'> & { readonly stream: number };

/** The sums of every spend counter, as SpendTotals fields. */
const SUMS = `coalesce(sum(requests), 0) AS requests, coalesce(sum(prompt_tokens), 0) AS promptTokens,
  coalesce(sum(cached_tokens), 0) AS cachedTokens, coalesce(sum(completion_tokens), 0) AS completionTokens,
  coalesce(sum(reasoning_tokens), 0) AS reasoningTokens, coalesce(sum(cost_micros), 0) AS costMicros,
  coalesce(sum(errors), 0) AS errors, coalesce(sum(rejected_rate_limit), 0) AS rejectedRateLimit,
  coalesce(sum(rejected_budget), 0) AS rejectedBudget`;

const REQUEST_COLUMNS = `request_id AS requestId, created_at AS createdAt, endpoint, model, stream, status, http_status AS httpStatus,
  coalesce(prompt_tokens, est_prompt_tokens) AS promptTokens, coalesce(completion_tokens, est_completion_tokens) AS completionTokens,
  coalesce(cost_micros, est_cost_micros) AS costMicros, latency_ms AS latencyMs, error_code AS errorCode`;

/** The dashboard's reads over one SQLite database. */
export class SqliteDashboardReads implements DashboardReads {
  private readonly database: TollgateDatabase;
  private readonly directoryReader: DirectoryReader;
  private readonly statements: ReturnType<SqliteDashboardReads['prepare']>;

  constructor(database: TollgateDatabase) {
    this.database = database;
    this.directoryReader = new DirectoryReader(database.sqlite);
    this.statements = this.prepare();
  }

  private prepare() {
    const s = this.database.sqlite;
    // Rollups hold rows of existing keys only (keys are never deleted), so
    // none of these needs querySpend's join to api_keys.
    return {
      // Through the primary key, which starts with the month (only the two sums the pages show: each sum costs).
      // Rows as arrays (raw): a third cheaper than objects for a thousand keys.
      monthByKey: s.prepare('SELECT key_id, sum(requests), sum(cost_micros) FROM rollups_monthly WHERE month = ? GROUP BY key_id').raw(),
      // The writer keeps each key's latest request time with its lifetime sums.
      lifetime: s.prepare('SELECT key_id, cost_micros, last_request_at FROM rollups_lifetime').raw(),
      keyLifetimeCost: s.prepare('SELECT cost_micros FROM rollups_lifetime WHERE key_id = ?').pluck(),
      // Days filed after today, through rollups_daily_day_cover (normally none): per key, and whether in this month.
      afterToday: s.prepare(
        'SELECT key_id AS keyId, day < ? AS inMonth, sum(cost_micros) AS costMicros FROM rollups_daily WHERE day > ? GROUP BY key_id, inMonth',
      ),
      weekByKey: s.prepare('SELECT key_id, sum(cost_micros) FROM rollups_daily WHERE day >= ? AND day <= ? GROUP BY key_id').raw(),
      keyCostAfter: s.prepare('SELECT coalesce(sum(cost_micros), 0) FROM rollups_daily WHERE key_id = ? AND day > ?').pluck(),
      // Through the partial index on pending rows (a handful).
      pendingBetween: s.prepare("SELECT count(*) FROM ledger WHERE status = 'pending' AND created_at >= ? AND created_at < ?").pluck(),
      dayTotals: s.prepare(`SELECT day, ${SUMS} FROM rollups_daily_total WHERE day >= ? AND day <= ? GROUP BY day`),
      hourlyAll: s.prepare(
        `SELECT hour, sum(requests) AS requests, sum(prompt_tokens) AS promptTokens, sum(completion_tokens) AS completionTokens,
           sum(cost_micros) AS costMicros, sum(rejected_rate_limit) AS rejectedRateLimit, sum(rejected_budget) AS rejectedBudget
         FROM rollups_hourly WHERE hour >= ? AND hour <= ? GROUP BY hour ORDER BY hour`,
      ),
      // A tenant's keys through api_keys_tenant, then each key's hours through the rollup's primary key.
      hourlyTenant: s.prepare(
        `SELECT r.hour, sum(r.requests) AS requests, sum(r.prompt_tokens) AS promptTokens, sum(r.completion_tokens) AS completionTokens,
           sum(r.cost_micros) AS costMicros, sum(r.rejected_rate_limit) AS rejectedRateLimit, sum(r.rejected_budget) AS rejectedBudget
         FROM api_keys k JOIN rollups_hourly r ON r.key_id = k.id AND r.hour >= ? AND r.hour <= ? WHERE k.tenant_id = ? GROUP BY r.hour ORDER BY r.hour`,
      ),
      hourlyKey: s.prepare(
        `SELECT hour, requests, prompt_tokens AS promptTokens, completion_tokens AS completionTokens, cost_micros AS costMicros,
           rejected_rate_limit AS rejectedRateLimit, rejected_budget AS rejectedBudget
         FROM rollups_hourly WHERE key_id = ? AND hour >= ? AND hour <= ? ORDER BY hour`,
      ),
      // The newest rows of one key, through ledger_key_time (and ledger_key_429 for the 429s); older than a cursor's row after the first page.
      latest: s.prepare(`SELECT ${REQUEST_COLUMNS} FROM ledger WHERE key_id = ? ORDER BY created_at DESC, request_id DESC LIMIT ?`),
      latestAfter: s.prepare(
        `SELECT ${REQUEST_COLUMNS} FROM ledger WHERE key_id = ? AND (created_at, request_id) < (?, ?) ORDER BY created_at DESC, request_id DESC LIMIT ?`,
      ),
      recent429: s.prepare(`SELECT ${REQUEST_COLUMNS} FROM ledger WHERE key_id = ? AND http_status = 429 ORDER BY created_at DESC, request_id DESC LIMIT ?`),
      recent429After: s.prepare(
        `SELECT ${REQUEST_COLUMNS} FROM ledger WHERE key_id = ? AND http_status = 429 AND (created_at, request_id) < (?, ?)
         ORDER BY created_at DESC, request_id DESC LIMIT ?`,
      ),
    };
  }

  /** Every key and tenant with parsed policies; re-read only when one of them changed. */
  async directory(): Promise<Directory> {
    return this.directoryReader.read();
  }

  /** Spend of every key today, this month and in its lifetime (in the deployment's time zone), with the totals `tollgate spend` would print. */
  async spendByKey(now: number): Promise<SpendByKey> {
    const today = calendarDay(now);
    const monthStart = monthStartOf(today);
    const nextMonth = `${addDays(monthStart, 32).slice(0, 7)}-01`;
    const todayReport = querySpend(this.database, { since: today, until: today, by: 'key' }, now);
    const monthDays = this.statements.dayTotals.all(monthStart, today) as Array<SpendTotals & { day: string }>;
    const monthTotal = monthDays.reduce<SpendTotals>((sum, row) => addTotals(sum, row), ZERO_TOTALS);
    const monthPending = this.statements.pendingBetween.get(dayStartMs(monthStart), dayEndMs(today)) as number;

    const later = this.statements.afterToday.all(nextMonth, today) as Array<{ keyId: string; inMonth: number; costMicros: number }>;
    const laterThisMonth = new Set(later.filter((row) => row.inMonth === 1).map((row) => row.keyId));
    const monthByKey = new Map<string, KeySpend>();
    for (const [keyId, requests, costMicros] of this.statements.monthByKey.all(today.slice(0, 7)) as Array<[string, number, number]>) {
      if (!laterThisMonth.has(keyId)) monthByKey.set(keyId, { requests, costMicros });
    }
    for (const keyId of laterThisMonth) {
      const row = querySpend(this.database, { keyId, since: monthStart, until: today, by: 'key' }, now).rows[0];
      if (row !== undefined) monthByKey.set(keyId, { requests: row.requests, costMicros: row.costMicros });
    }

    const weekCostByKey = new Map(this.statements.weekByKey.all(periodStart('week', now), today) as Array<[string, number]>);
    const lifetimeCostByKey = new Map<string, number>();
    const lastRequestAtByKey = new Map<string, number>();
    for (const [keyId, costMicros, lastRequestAt] of this.statements.lifetime.all() as Array<[string, number, number]>) {
      lifetimeCostByKey.set(keyId, costMicros);
      lastRequestAtByKey.set(keyId, lastRequestAt);
    }
    for (const row of later) lifetimeCostByKey.set(row.keyId, (lifetimeCostByKey.get(row.keyId) ?? 0) - row.costMicros);

    return {
      today,
      monthStart,
      todayTotal: withPending(todayReport.total, todayReport.pending),
      monthTotal: withPending(monthTotal, monthPending),
      todayByKey: byKey(todayReport),
      monthByKey,
      weekCostByKey,
      lifetimeCostByKey,
      lastRequestAtByKey,
    };
  }

  /** One key's cost from its first request to today (a budget "in total"). */
  async keyLifetimeCost(keyId: string, now: number): Promise<number> {
    const lifetime = (this.statements.keyLifetimeCost.get(keyId) as number | undefined) ?? 0;
    return lifetime - (this.statements.keyCostAfter.get(keyId, calendarDay(now)) as number);
  }

  /** Spend per UTC day over every key, oldest first, for the last {@link CHART_DAYS} days (days without rows are zero). */
  async dailySeries(now: number): Promise<DayPoint[]> {
    const today = calendarDay(now);
    const rows = this.statements.dayTotals.all(addDays(today, -(CHART_DAYS - 1)), today) as Array<SpendTotals & { day: string }>;
    return daysUntil(today, new Map(rows.map((row) => [row.day, pickTotals(row)])));
  }

  /** Spend per UTC day of one key for the last {@link CHART_DAYS} days (a few hundred rollup rows). */
  async keyDailySeries(keyId: string, now: number): Promise<DayPoint[]> {
    const today = calendarDay(now);
    const since = addDays(today, -(CHART_DAYS - 1));
    const rows = querySpend(this.database, { keyId, since, until: today, by: 'day' }, now).rows;
    return daysUntil(today, new Map(rows.map((row) => [row.group, pickTotals(row)])));
  }

  /** Spend per hour over every key (or one), the last {@link CHART_HOURS} hours including the current one. */
  async hourlySeries(now: number, keyId?: string): Promise<HourPoint[]> {
    const { first, last } = chartHours(now);
    const rows = (keyId === undefined ? this.statements.hourlyAll.all(first, last) : this.statements.hourlyKey.all(keyId, first, last)) as HourPoint[];
    return hoursFrom(first, last, rows);
  }

  /** One tenant's totals from `since` to today (querySpend with the tenant: the CLI's numbers). */
  async tenantTotals(tenantId: string, since: string, now: number): Promise<PeriodTotals> {
    const report = querySpend(this.database, { tenantId, since, by: 'total' }, now);
    return withPending(report.total, report.pending);
  }

  /** Spend per day over one tenant's keys for the last {@link CHART_DAYS} days. */
  async tenantDailySeries(tenantId: string, now: number): Promise<DayPoint[]> {
    const today = calendarDay(now);
    const rows = querySpend(this.database, { tenantId, since: addDays(today, -(CHART_DAYS - 1)), until: today, by: 'day' }, now).rows;
    return daysUntil(today, new Map(rows.map((row) => [row.group, pickTotals(row)])));
  }

  /** Spend per hour over one tenant's keys, the last {@link CHART_HOURS} hours including the current one. */
  async tenantHourlySeries(tenantId: string, now: number): Promise<HourPoint[]> {
    const { first, last } = chartHours(now);
    return hoursFrom(first, last, this.statements.hourlyTenant.all(first, last, tenantId) as HourPoint[]);
  }

  /** One key's totals for a range of days (querySpend: the CLI's numbers). */
  async keyTotals(keyId: string, since: string, now: number): Promise<PeriodTotals> {
    const report = querySpend(this.database, { keyId, since, by: 'total' }, now);
    return withPending(report.total, report.pending);
  }

  /** One key's spend by model since `since`, most expensive first. */
  async keyModels(keyId: string, since: string, now: number): Promise<Array<{ model: string; totals: SpendTotals }>> {
    return querySpend(this.database, { keyId, since, by: 'model' }, now).rows.map((row) => ({ model: row.group, totals: pickTotals(row) }));
  }

  /** A key's end users or tags since `since` (src/endusers), the most spent first, a page of at most `limit`. */
  async keyTop(keyId: string, by: 'user' | 'tag' | 'session', since: string, now: number, limit: number, cursor?: string): Promise<Page<TopRow>> {
    return topPage(querySpend(this.database, { keyId, since, by, limit, cursor, namedOnly: true }, now));
  }

  /** A key's ledger rows, newest first, a page of at most `limit`. */
  async latestRequests(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    return this.requests(keyId, limit, cursor, 'requests');
  }

  /** A key's 429 answers (refused by a limit or budget, or passed on from the upstream), newest first. */
  async recent429s(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    return this.requests(keyId, limit, cursor, '429');
  }

  private requests(keyId: string, limit: number, cursor: string | undefined, list: 'requests' | '429'): Page<RequestRow> {
    const [first, after] =
      list === 'requests' ? [this.statements.latest, this.statements.latestAfter] : [this.statements.recent429, this.statements.recent429After];
    const from = cursor === undefined ? undefined : decodeRequestCursor(cursor, { keyId, list });
    const raw = (from === undefined ? first.all(keyId, limit + 1) : after.all(keyId, from.createdAt, from.requestId, limit + 1)) as RawRequestRow[];
    return requestPage(
      raw.map((row) => ({ ...row, stream: row.stream === 1 })),
      limit,
      keyId,
      list,
    );
  }
}
