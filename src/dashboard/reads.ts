/**
 * What the dashboard reads, and how it stays fast with millions of ledger
 * rows.
 *
 * Totals come from {@link querySpend} (the same code as `tollgate spend`), so
 * the dashboard and the CLI cannot disagree. Charts read the hourly and daily
 * rollups; the two row lists of a key page (latest requests, recent 429s) read
 * the newest rows of one key through an index. Nothing scans the ledger.
 *
 * Month-to-date per key and the 90-day chart over every key would mean
 * summing a whole month of rollups on every poll, so they are split at the
 * *first open day*: days that ended more than {@link CLOSE_MARGIN_MS} ago are
 * closed, each closed day's sums are computed once and kept, and only the
 * open day(s) are read on every request. A closed day's rollups change in one
 * way only: a request still pending from that day settles (the writer adds
 * actual − estimate to the day the request started). So each kept day
 * remembers how many of its rows were pending, and is summed again when that
 * number changes (a cheap count through the partial index on pending rows).
 * A new day costs one day's sums; a restart costs the month once. Sums over
 * disjoint days add up exactly (integers), so the result equals one
 * `querySpend` over the whole range — the tests check it against the CLI.
 */
import type { TollgateDatabase } from '../db/open.js';
import { querySpend, type SpendReport, type SpendTotals } from '../reports/spend.js';
import { addDays, HOUR_MS, monthStartOf, utcDay, utcHour } from '../calendar.js';
import { PolicyError, type Policy } from '../limits/policy.js';
import { readStoredPolicy } from '../keys/policy-json.js';
import type { KeyStatus } from '../keys/store.js';

/** A day counts as closed this long after it ended (requests in flight at midnight land first). */
export const CLOSE_MARGIN_MS = 10 * 60_000;
/** Days of the long chart. */
export const CHART_DAYS = 90;
/** Hours of the short chart. */
export const CHART_HOURS = 48;

/** Before any possible rollup day: "since the beginning". */
const FIRST_DAY = '0000-01-01';

/** Nothing spent (days and keys without rollup rows). */
export const ZERO_TOTALS: SpendTotals = Object.freeze({
  requests: 0,
  promptTokens: 0,
  cachedTokens: 0,
  completionTokens: 0,
  reasoningTokens: 0,
  costMicros: 0,
  errors: 0,
  rejectedRateLimit: 0,
  rejectedBudget: 0,
});

/** Spend totals plus the requests still in flight (counted at their estimate). */
export interface PeriodTotals extends SpendTotals {
  readonly pending: number;
}

/** A key as the dashboard lists it (never its hash or secret). */
export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly tenantId: string | null;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  readonly expiresAt: number | null;
  /** Undefined when the stored policy is corrupt (the key then fails closed). */
  readonly policy: Policy | undefined;
  readonly policyError: string | undefined;
}

/** A tenant, for names, filters and tenant budgets. */
export interface TenantRecord {
  readonly id: string;
  readonly name: string;
  readonly policy: Policy | undefined;
}

/** Every key and tenant, parsed once per change. */
export interface Directory {
  readonly keys: readonly KeyRecord[];
  readonly keysById: ReadonlyMap<string, KeyRecord>;
  readonly tenants: readonly TenantRecord[];
  readonly tenantsById: ReadonlyMap<string, TenantRecord>;
}

/** Spend of every key for today and for the month to date. */
export interface SpendByKey {
  readonly today: string;
  readonly monthStart: string;
  readonly todayTotal: PeriodTotals;
  readonly monthTotal: PeriodTotals;
  readonly todayByKey: ReadonlyMap<string, SpendTotals>;
  readonly monthByKey: ReadonlyMap<string, SpendTotals>;
  /** Per key, the days read live (today, and yesterday in the first minutes of a day). */
  readonly openByKey: ReadonlyMap<string, SpendTotals>;
  /** Totals of each day read live. */
  readonly openDays: ReadonlyArray<{ readonly day: string; readonly totals: SpendTotals }>;
}

/** One UTC day of a chart. */
export interface DayPoint {
  readonly day: string;
  readonly totals: SpendTotals;
}

/** One UTC hour of a chart, from the hourly rollups. */
export interface HourPoint {
  readonly hour: number;
  readonly requests: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
  readonly rejectedRateLimit: number;
  readonly rejectedBudget: number;
}

/** One ledger row as the key page lists it. */
export interface RequestRow {
  readonly requestId: string;
  readonly createdAt: number;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: boolean;
  readonly status: string;
  readonly httpStatus: number | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Actual cost, or the estimate while pending. */
  readonly costMicros: number;
  readonly latencyMs: number | null;
  readonly errorCode: string | null;
}

/** A row as SQLite returns it (booleans are 0/1). */
type RawRequestRow = Omit<RequestRow, 'stream'> & { readonly stream: number };

/** One closed day's sums, kept until a row of that day still pending settles. */
interface ClosedDay {
  /** Different for every summing (the merged month's signature). */
  readonly version: number;
  /** Rows of the day that were pending when it was summed (its signature). */
  readonly pending: number;
  readonly total: SpendTotals;
  /** Per key, for days of the current month (the chart needs only totals). */
  readonly byKey: Map<string, SpendTotals> | undefined;
}

interface ClosedState {
  readonly lastClosed: string;
  readonly pendingByDay: ReadonlyMap<string, number>;
  /** Stale days left to sum (0 after a full refresh). */
  readonly remaining: number;
}

/** The month's closed days merged, kept while none of them changes. */
interface ClosedMonth {
  readonly signature: string;
  readonly byKey: Map<string, SpendTotals>;
  readonly total: PeriodTotals;
}

/** The status people see for a key at `now`. */
export function keyStatusOf(key: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, now: number): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return 'active';
}

function addTotals(a: SpendTotals, b: SpendTotals): SpendTotals {
  return {
    requests: a.requests + b.requests,
    promptTokens: a.promptTokens + b.promptTokens,
    cachedTokens: a.cachedTokens + b.cachedTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    costMicros: a.costMicros + b.costMicros,
    errors: a.errors + b.errors,
    rejectedRateLimit: a.rejectedRateLimit + b.rejectedRateLimit,
    rejectedBudget: a.rejectedBudget + b.rejectedBudget,
  };
}

function withPending(totals: SpendTotals, pending: number): PeriodTotals {
  return { ...pickTotals(totals), pending };
}

/** Only the SpendTotals fields (querySpend rows carry a group name too). */
function pickTotals(row: SpendTotals): SpendTotals {
  return {
    requests: row.requests,
    promptTokens: row.promptTokens,
    cachedTokens: row.cachedTokens,
    completionTokens: row.completionTokens,
    reasoningTokens: row.reasoningTokens,
    costMicros: row.costMicros,
    errors: row.errors,
    rejectedRateLimit: row.rejectedRateLimit,
    rejectedBudget: row.rejectedBudget,
  };
}

function byKey(report: SpendReport): Map<string, SpendTotals> {
  const map = new Map<string, SpendTotals>();
  for (const row of report.rows) if (row.keyId !== undefined) map.set(row.keyId, pickTotals(row));
  return map;
}

function mergeInto(target: Map<string, SpendTotals>, source: ReadonlyMap<string, SpendTotals>): void {
  for (const [id, totals] of source) {
    const current = target.get(id);
    target.set(id, current === undefined ? totals : addTotals(current, totals));
  }
}

/** The dashboard's reads over one database; one instance per process (it holds the caches). */
export class DashboardReads {
  private readonly database: TollgateDatabase;
  private readonly statements: ReturnType<DashboardReads['prepare']>;
  private directoryCache: { signature: string; directory: Directory } | undefined;
  /** Parsed policies by their stored text (keys often share one). */
  private policies = new Map<string, { policy: Policy | undefined; error: string | undefined }>();
  private readonly closedDaysCache = new Map<string, ClosedDay>();
  private closedDayVersion = 0;
  private lastRefresh: { now: number; state: ClosedState } | undefined;
  private closedMonth: ClosedMonth | undefined;
  /** Lifetime cost of the closed days per key (for `total` budgets), filled when first asked for. */
  private lifetime: { signature: string; byKey: Map<string, number> } | undefined;

  constructor(database: TollgateDatabase) {
    this.database = database;
    this.statements = this.prepare();
  }

  private prepare() {
    const s = this.database.sqlite;
    return {
      versions: s.prepare('SELECT (SELECT coalesce(max(version), 0) FROM api_keys) AS keys, (SELECT coalesce(max(version), 0) FROM tenants) AS tenants'),
      keys: s.prepare(
        `SELECT k.id, k.name, k.tenant_id AS tenantId, t.name AS tenant, k.prefix, k.created_at AS createdAt,
           k.revoked_at AS revokedAt, k.expires_at AS expiresAt, k.policy
         FROM api_keys k LEFT JOIN tenants t ON t.id = k.tenant_id ORDER BY k.name, k.created_at`,
      ),
      tenants: s.prepare('SELECT id, name, policy FROM tenants ORDER BY name'),
      // Through the partial index ledger_pending: a handful of rows.
      pendingByDay: s.prepare(
        "SELECT created_at - created_at % 86400000 AS dayStart, count(*) AS n FROM ledger WHERE status = 'pending' AND created_at >= ? AND created_at < ? GROUP BY dayStart",
      ),
      // Days over every key without the join to api_keys that querySpend makes
      // (every rollup row belongs to a key: keys are never deleted), through
      // the covering index rollups_daily_day_cover. For the chart's older days.
      dayTotals: s.prepare(
        `SELECT day, coalesce(sum(requests), 0) AS requests, coalesce(sum(prompt_tokens), 0) AS promptTokens,
           coalesce(sum(cached_tokens), 0) AS cachedTokens, coalesce(sum(completion_tokens), 0) AS completionTokens,
           coalesce(sum(reasoning_tokens), 0) AS reasoningTokens, coalesce(sum(cost_micros), 0) AS costMicros,
           coalesce(sum(errors), 0) AS errors, coalesce(sum(rejected_rate_limit), 0) AS rejectedRateLimit,
           coalesce(sum(rejected_budget), 0) AS rejectedBudget
         FROM rollups_daily WHERE day >= ? AND day <= ? GROUP BY day`,
      ),
      hourlyAll: s.prepare(
        `SELECT hour, sum(requests) AS requests, sum(prompt_tokens) AS promptTokens, sum(completion_tokens) AS completionTokens,
           sum(cost_micros) AS costMicros, sum(rejected_rate_limit) AS rejectedRateLimit, sum(rejected_budget) AS rejectedBudget
         FROM rollups_hourly WHERE hour >= ? AND hour <= ? GROUP BY hour ORDER BY hour`,
      ),
      hourlyKey: s.prepare(
        `SELECT hour, requests, prompt_tokens AS promptTokens, completion_tokens AS completionTokens, cost_micros AS costMicros,
           rejected_rate_limit AS rejectedRateLimit, rejected_budget AS rejectedBudget
         FROM rollups_hourly WHERE key_id = ? AND hour >= ? AND hour <= ? ORDER BY hour`,
      ),
      // The newest rows of one key, through ledger_key_time (and ledger_key_429 for the 429s).
      latest: s.prepare(
        `SELECT request_id AS requestId, created_at AS createdAt, endpoint, model, stream, status, http_status AS httpStatus,
           coalesce(prompt_tokens, est_prompt_tokens) AS promptTokens, coalesce(completion_tokens, est_completion_tokens) AS completionTokens,
           coalesce(cost_micros, est_cost_micros) AS costMicros, latency_ms AS latencyMs, error_code AS errorCode
         FROM ledger WHERE key_id = ? ORDER BY created_at DESC LIMIT ?`,
      ),
      recent429: s.prepare(
        `SELECT request_id AS requestId, created_at AS createdAt, endpoint, model, stream, status, http_status AS httpStatus,
           coalesce(prompt_tokens, est_prompt_tokens) AS promptTokens, coalesce(completion_tokens, est_completion_tokens) AS completionTokens,
           coalesce(cost_micros, est_cost_micros) AS costMicros, latency_ms AS latencyMs, error_code AS errorCode
         FROM ledger WHERE key_id = ? AND http_status = 429 ORDER BY created_at DESC LIMIT ?`,
      ),
      lastUsed: s.prepare('SELECT max(created_at) AS at FROM ledger WHERE key_id = ?').pluck(),
    };
  }

  /** Every key and tenant with parsed policies; re-read only when one of them changed. */
  directory(): Directory {
    const versions = this.statements.versions.get() as { keys: number; tenants: number };
    const signature = `${versions.keys}:${versions.tenants}`;
    if (this.directoryCache?.signature === signature) return this.directoryCache.directory;
    // Parsing a policy is the costly part: reuse the parse of unchanged policy text.
    const parsed = new Map<string, { policy: Policy | undefined; error: string | undefined }>();
    const policyOf = (text: string): { policy: Policy | undefined; error: string | undefined } => {
      let result = this.policies.get(text) ?? parsed.get(text);
      if (result === undefined) {
        const read = readStoredPolicy(text);
        result = read instanceof PolicyError ? { policy: undefined, error: read.message } : { policy: read, error: undefined };
      }
      parsed.set(text, result);
      return result;
    };
    const keys = (this.statements.keys.all() as Array<Omit<KeyRecord, 'policy' | 'policyError'> & { policy: string }>).map((row): KeyRecord => {
      const { policy, error } = policyOf(row.policy);
      return { ...row, policy, policyError: error };
    });
    const tenants = (this.statements.tenants.all() as Array<{ id: string; name: string; policy: string }>).map((row): TenantRecord => ({
      id: row.id,
      name: row.name,
      policy: policyOf(row.policy).policy,
    }));
    this.policies = parsed;
    const directory: Directory = {
      keys,
      keysById: new Map(keys.map((key) => [key.id, key])),
      tenants,
      tenantsById: new Map(tenants.map((tenant) => [tenant.id, tenant])),
    };
    this.directoryCache = { signature, directory };
    return directory;
  }

  /** The first day still read live at `now` (yesterday during the first minutes of a day). */
  private firstOpenDay(now: number): string {
    return utcDay(now - CLOSE_MARGIN_MS);
  }

  /**
   * Brings the closed days of the chart (and of the month, per key) up to
   * date: sums days not kept yet or whose pending count changed, at most
   * `limit` of them (all by default); drops days that left the window.
   * Returns the closed range, each day's pending count and how many days are
   * still to sum. With `reuse`, the last full refresh at the same `now` is
   * taken as it is: a request refreshes once (through spendByKey), then its
   * other reads reuse that.
   */
  private refreshClosedDays(now: number, options: { limit?: number; reuse?: boolean } = {}): ClosedState {
    if (options.reuse === true && this.lastRefresh?.now === now && this.lastRefresh.state.remaining === 0) return this.lastRefresh.state;
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    const today = utcDay(now);
    const firstOpen = this.firstOpenDay(now);
    const lastClosed = addDays(firstOpen, -1);
    const monthStart = monthStartOf(today);
    const chartStart = addDays(today, -(CHART_DAYS - 1));
    const pendingByDay = new Map<string, number>();
    const rows = this.statements.pendingByDay.all(Date.parse(`${FIRST_DAY}T00:00:00Z`), Date.parse(`${firstOpen}T00:00:00Z`)) as Array<{ dayStart: number; n: number }>;
    for (const row of rows) pendingByDay.set(utcDay(row.dayStart), row.n);

    for (const day of [...this.closedDaysCache.keys()]) if (day < chartStart || day > lastClosed) this.closedDaysCache.delete(day);
    const stale: string[] = [];
    for (let day = chartStart; day <= lastClosed; day = addDays(day, 1)) {
      const kept = this.closedDaysCache.get(day);
      const needsKeys = day >= monthStart;
      if (kept === undefined || kept.pending !== (pendingByDay.get(day) ?? 0) || (needsKeys && kept.byKey === undefined)) stale.push(day);
    }
    const batch = stale.slice(0, limit);
    const older = batch.filter((day) => day < monthStart);
    if (older.length > 0) {
      // One pass over the span of older days (they are usually contiguous).
      const sums = new Map(
        (this.statements.dayTotals.all(older[0], older[older.length - 1]) as Array<SpendTotals & { day: string }>).map((row) => [row.day, pickTotals(row)]),
      );
      for (const day of older) {
        this.closedDaysCache.set(day, { version: ++this.closedDayVersion, pending: pendingByDay.get(day) ?? 0, total: sums.get(day) ?? ZERO_TOTALS, byKey: undefined });
      }
    }
    for (const day of batch.filter((d) => d >= monthStart)) {
      const report = querySpend(this.database, { since: day, until: day, by: 'key' }, now);
      this.closedDaysCache.set(day, { version: ++this.closedDayVersion, pending: report.pending, total: pickTotals(report.total), byKey: byKey(report) });
    }
    const state: ClosedState = { lastClosed, pendingByDay, remaining: stale.length - batch.length };
    this.lastRefresh = { now, state };
    return state;
  }

  /**
   * Sums the closed days in the background, one day per turn of the event
   * loop (a few ms each), so that even the first page of a process is fast
   * and a big ledger never stalls requests for long. Stops at the first
   * error (the database was closed). Resolves when done.
   */
  warmUp(now: () => number, options: { background?: boolean } = {}): Promise<void> {
    // In the background the timers must not keep a stopping process alive.
    const later = (fn: () => void) => {
      const timer = setTimeout(fn, 0);
      if (options.background === true) timer.unref();
    };
    let lifetimes: string[] | undefined;
    return new Promise((resolve) => {
      const step = (): void => {
        try {
          const at = now();
          if (this.refreshClosedDays(at, { limit: 1 }).remaining > 0) {
            later(step);
            return;
          }
          // Then the lifetimes that budgets "in total" need, a batch per turn.
          lifetimes ??= this.keysNeedingLifetime();
          const batch = lifetimes.splice(0, 20);
          for (const id of batch) this.closedLifetime(id, at);
          if (lifetimes.length > 0) {
            later(step);
            return;
          }
        } catch {
          // Closed or unreadable: the next request computes what it needs (or reports the error).
        }
        resolve();
      };
      later(step);
    });
  }

  /** The month's closed days per key and in total, merged once per change. */
  private closedMonthSums(now: number): ClosedMonth {
    const { lastClosed } = this.refreshClosedDays(now);
    const monthStart = monthStartOf(utcDay(now));
    const days: Array<[string, ClosedDay]> = [];
    for (let day = monthStart; day <= lastClosed; day = addDays(day, 1)) days.push([day, this.closedDaysCache.get(day)!]);
    const signature = days.map(([, sums]) => sums.version).join(',');
    if (this.closedMonth?.signature === signature) return this.closedMonth;
    const merged = new Map<string, SpendTotals>();
    let total: SpendTotals = ZERO_TOTALS;
    let pending = 0;
    for (const [, sums] of days) {
      mergeInto(merged, sums.byKey ?? new Map());
      total = addTotals(total, sums.total);
      pending += sums.pending;
    }
    this.closedMonth = { signature, byKey: merged, total: withPending(total, pending) };
    return this.closedMonth;
  }

  /** Spend of the open days, one report per day (one or two), read live. */
  private openDays(now: number): Array<{ day: string; report: SpendReport }> {
    const today = utcDay(now);
    const days: string[] = [];
    for (let day = this.firstOpenDay(now); day <= today; day = addDays(day, 1)) days.push(day);
    return days.map((day) => ({ day, report: querySpend(this.database, { since: day, until: day, by: 'key' }, now) }));
  }

  /** Spend of every key today and this month (UTC), with the totals `tollgate spend` would print. */
  spendByKey(now: number): SpendByKey {
    const today = utcDay(now);
    const monthStart = monthStartOf(today);
    const closed = this.closedMonthSums(now);
    const monthByKey = new Map(closed.byKey);
    let monthTotal: SpendTotals = closed.total;
    let monthPending = closed.total.pending;
    let todayByKey = new Map<string, SpendTotals>();
    let todayTotal: PeriodTotals = withPending(ZERO_TOTALS, 0);
    const openByKey = new Map<string, SpendTotals>();
    const openDays: Array<{ day: string; totals: SpendTotals }> = [];
    for (const { day, report } of this.openDays(now)) {
      const perKey = byKey(report);
      mergeInto(openByKey, perKey);
      openDays.push({ day, totals: pickTotals(report.total) });
      if (day === today) {
        todayByKey = perKey;
        todayTotal = withPending(report.total, report.pending);
      }
      if (day >= monthStart) {
        mergeInto(monthByKey, perKey);
        monthTotal = addTotals(monthTotal, report.total);
        monthPending += report.pending;
      }
    }
    return { today, monthStart, todayTotal, monthTotal: withPending(monthTotal, monthPending), todayByKey, monthByKey, openByKey, openDays };
  }

  /**
   * Lifetime spend of a key (for `total` budgets): its closed days once (per
   * cache), plus the open days from `spend` (read with it, so both agree).
   */
  lifetimeSpent(keyId: string, spend: SpendByKey, now: number): number {
    return this.closedLifetime(keyId, now) + (spend.openByKey.get(keyId)?.costMicros ?? 0);
  }

  /** A key's cost over every closed day, kept until a closed day changes. */
  private closedLifetime(keyId: string, now: number): number {
    const { lastClosed, pendingByDay } = this.refreshClosedDays(now, { reuse: true });
    const signature = `${lastClosed}|${[...pendingByDay].join(',')}`;
    if (this.lifetime?.signature !== signature) this.lifetime = { signature, byKey: new Map() };
    let spent = this.lifetime.byKey.get(keyId);
    if (spent === undefined) {
      spent = querySpend(this.database, { keyId, since: FIRST_DAY, until: lastClosed, by: 'total' }, now).total.costMicros;
      this.lifetime.byKey.set(keyId, spent);
    }
    return spent;
  }

  /** Keys whose lifetime spend a page needs: those with a `total` budget, and the keys of tenants with one. */
  private keysNeedingLifetime(): string[] {
    const directory = this.directory();
    const tenants = new Set(directory.tenants.filter((t) => t.policy?.budget?.period === 'total').map((t) => t.id));
    return directory.keys.filter((key) => key.policy?.budget?.period === 'total' || (key.tenantId !== null && tenants.has(key.tenantId))).map((key) => key.id);
  }

  /**
   * Spend per UTC day over every key, oldest first, for the last
   * {@link CHART_DAYS} days (days without rows are zero); the open days come
   * from `spend`, read in the same request.
   */
  dailySeries(spend: SpendByKey, now: number): DayPoint[] {
    const today = utcDay(now);
    this.refreshClosedDays(now, { reuse: true });
    const open = new Map(spend.openDays.map(({ day, totals }) => [day, totals]));
    const points: DayPoint[] = [];
    for (let i = CHART_DAYS - 1; i >= 0; i -= 1) {
      const day = addDays(today, -i);
      points.push({ day, totals: open.get(day) ?? this.closedDaysCache.get(day)?.total ?? ZERO_TOTALS });
    }
    return points;
  }

  /** Spend per UTC day of one key for the last {@link CHART_DAYS} days (a few hundred rollup rows, read live). */
  keyDailySeries(keyId: string, now: number): DayPoint[] {
    const today = utcDay(now);
    const since = addDays(today, -(CHART_DAYS - 1));
    const rows = new Map(querySpend(this.database, { keyId, since, until: today, by: 'day' }, now).rows.map((row) => [row.group, pickTotals(row)]));
    const points: DayPoint[] = [];
    for (let i = CHART_DAYS - 1; i >= 0; i -= 1) {
      const day = addDays(today, -i);
      points.push({ day, totals: rows.get(day) ?? ZERO_TOTALS });
    }
    return points;
  }

  /** Spend per hour over every key (or one), the last {@link CHART_HOURS} hours including the current one. */
  hourlySeries(now: number, keyId?: string): HourPoint[] {
    const last = utcHour(now);
    const first = last - (CHART_HOURS - 1) * HOUR_MS;
    const rows = (keyId === undefined ? this.statements.hourlyAll.all(first, last) : this.statements.hourlyKey.all(keyId, first, last)) as HourPoint[];
    const byHour = new Map(rows.map((row) => [row.hour, row]));
    const points: HourPoint[] = [];
    for (let hour = first; hour <= last; hour += HOUR_MS) {
      points.push(byHour.get(hour) ?? { hour, requests: 0, promptTokens: 0, completionTokens: 0, costMicros: 0, rejectedRateLimit: 0, rejectedBudget: 0 });
    }
    return points;
  }

  /** One key's totals for a range of days (querySpend: the CLI's numbers). */
  keyTotals(keyId: string, since: string, now: number): PeriodTotals {
    const report = querySpend(this.database, { keyId, since, by: 'total' }, now);
    return withPending(report.total, report.pending);
  }

  /** One key's spend by model since `since`, most expensive first. */
  keyModels(keyId: string, since: string, now: number): Array<{ model: string; totals: SpendTotals }> {
    return querySpend(this.database, { keyId, since, by: 'model' }, now).rows.map((row) => ({ model: row.group, totals: pickTotals(row) }));
  }

  /** The newest ledger rows of a key. */
  latestRequests(keyId: string, limit: number): RequestRow[] {
    return (this.statements.latest.all(keyId, limit) as RawRequestRow[]).map((row) => ({ ...row, stream: row.stream === 1 }));
  }

  /** The newest 429 answers of a key (refused by a limit or budget, or passed on from the upstream). */
  recent429s(keyId: string, limit: number): RequestRow[] {
    return (this.statements.recent429.all(keyId, limit) as RawRequestRow[]).map((row) => ({ ...row, stream: row.stream === 1 }));
  }

  /** When each key last made a request (an index seek per key, not a scan). */
  lastUsed(keyIds: Iterable<string>): Map<string, number | null> {
    const result = new Map<string, number | null>();
    for (const id of keyIds) result.set(id, (this.statements.lastUsed.get(id) as number | null) ?? null);
    return result;
  }
}

/** The start of the month and today, for labels. */
export function periodDays(now: number): { today: string; monthStart: string; chartStartDay: string; chartStartHour: number } {
  const today = utcDay(now);
  return { today, monthStart: monthStartOf(today), chartStartDay: addDays(today, -(CHART_DAYS - 1)), chartStartHour: utcHour(now) - (CHART_HOURS - 1) * HOUR_MS };
}
