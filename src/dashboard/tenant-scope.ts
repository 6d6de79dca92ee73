/**
 * What a tenant's dashboard session reads: the same reads as an admin's,
 * narrowed to the tenant's keys. The directory holds only its keys and its
 * own tenant, so every page built from it (overview, keys, a key's page)
 * lists, sums and finds nothing else — another tenant's key is simply not
 * there (404) — and the totals and charts that the admin reads over every
 * key are read over the tenant's keys instead. A key id that is not the
 * tenant's never reaches a per-key read (they refuse it as a second line).
 */
import type { TollgateDatabase } from '../db/open.js';
import { TollgateError } from '../errors.js';
import { querySpend, type SpendTotals } from '../reports/spend.js';
import { addDays, calendarDay, HOUR_MS, utcHour } from '../calendar.js';
import type { Directory } from './directory.js';
import { DashboardReads, type DayPoint, type HourPoint, type PeriodTotals, type RequestRow, type SpendByKey } from './reads.js';

const CHART_DAYS = 90;
const CHART_HOURS = 48;

function filterMap<V>(map: ReadonlyMap<string, V>, keep: ReadonlySet<string>): Map<string, V> {
  const out = new Map<string, V>();
  for (const [id, value] of map) if (keep.has(id)) out.set(id, value);
  return out;
}

/** Reads narrowed to one tenant's keys. */
export class TenantScopedReads extends DashboardReads {
  readonly tenantId: string;
  private readonly db: TollgateDatabase;
  private scoped: { base: Directory; directory: Directory; ids: ReadonlySet<string> } | undefined;
  private readonly hourly;

  constructor(database: TollgateDatabase, tenantId: string) {
    super(database);
    this.db = database;
    this.tenantId = tenantId;
    this.hourly = database.sqlite.prepare(
      `SELECT r.hour, sum(r.requests) AS requests, sum(r.prompt_tokens) AS promptTokens, sum(r.completion_tokens) AS completionTokens,
         sum(r.cost_micros) AS costMicros, sum(r.rejected_rate_limit) AS rejectedRateLimit, sum(r.rejected_budget) AS rejectedBudget
       FROM api_keys k JOIN rollups_hourly r ON r.key_id = k.id AND r.hour >= ? AND r.hour <= ? WHERE k.tenant_id = ? GROUP BY r.hour ORDER BY r.hour`,
    );
  }

  override directory(): Directory {
    const base = super.directory();
    if (this.scoped?.base !== base) {
      const keys = base.keys.filter((key) => key.tenantId === this.tenantId);
      const tenants = base.tenants.filter((tenant) => tenant.id === this.tenantId);
      const directory: Directory = {
        keys,
        keysById: new Map(keys.map((key) => [key.id, key])),
        tenants,
        tenantsById: new Map(tenants.map((tenant) => [tenant.id, tenant])),
      };
      this.scoped = { base, directory, ids: new Set(keys.map((key) => key.id)) };
    }
    return this.scoped.directory;
  }

  private ownKeyIds(): ReadonlySet<string> {
    this.directory();
    return this.scoped!.ids;
  }

  private requireOwn(keyId: string): void {
    if (!this.ownKeyIds().has(keyId)) throw new TollgateError('not_found', `no key with id "${keyId}"`, { param: 'id' });
  }

  private totals(since: string, until: string, now: number): PeriodTotals {
    const report = querySpend(this.db, { tenantId: this.tenantId, since, until, by: 'total' }, now);
    return { ...report.total, pending: report.pending };
  }

  override spendByKey(now: number): SpendByKey {
    const all = super.spendByKey(now);
    const ids = this.ownKeyIds();
    return {
      today: all.today,
      monthStart: all.monthStart,
      todayTotal: this.totals(all.today, all.today, now),
      monthTotal: this.totals(all.monthStart, all.today, now),
      todayByKey: filterMap(all.todayByKey, ids),
      monthByKey: filterMap(all.monthByKey, ids),
      weekCostByKey: filterMap(all.weekCostByKey, ids),
      lifetimeCostByKey: filterMap(all.lifetimeCostByKey, ids),
      lastRequestAtByKey: filterMap(all.lastRequestAtByKey, ids),
    };
  }

  override dailySeries(now: number): DayPoint[] {
    const today = calendarDay(now);
    const rows = querySpend(this.db, { tenantId: this.tenantId, since: addDays(today, -(CHART_DAYS - 1)), until: today, by: 'day' }, now).rows;
    const byDay = new Map<string, SpendTotals>(rows.map((row) => [row.group, row]));
    const zero: SpendTotals = {
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
    const points: DayPoint[] = [];
    for (let i = CHART_DAYS - 1; i >= 0; i -= 1) {
      const day = addDays(today, -i);
      const row = byDay.get(day);
      points.push({
        day,
        totals:
          row === undefined
            ? zero
            : {
                requests: row.requests,
                promptTokens: row.promptTokens,
                cachedTokens: row.cachedTokens,
                completionTokens: row.completionTokens,
                reasoningTokens: row.reasoningTokens,
                costMicros: row.costMicros,
                errors: row.errors,
                rejectedRateLimit: row.rejectedRateLimit,
                rejectedBudget: row.rejectedBudget,
              },
      });
    }
    return points;
  }

  override hourlySeries(now: number, keyId?: string): HourPoint[] {
    if (keyId !== undefined) {
      this.requireOwn(keyId);
      return super.hourlySeries(now, keyId);
    }
    const last = utcHour(now);
    const first = last - (CHART_HOURS - 1) * HOUR_MS;
    const byHour = new Map((this.hourly.all(first, last, this.tenantId) as HourPoint[]).map((row) => [row.hour, row]));
    const points: HourPoint[] = [];
    for (let hour = first; hour <= last; hour += HOUR_MS) {
      points.push(byHour.get(hour) ?? { hour, requests: 0, promptTokens: 0, completionTokens: 0, costMicros: 0, rejectedRateLimit: 0, rejectedBudget: 0 });
    }
    return points;
  }

  override keyLifetimeCost(keyId: string, now: number): number {
    this.requireOwn(keyId);
    return super.keyLifetimeCost(keyId, now);
  }

  override keyDailySeries(keyId: string, now: number): DayPoint[] {
    this.requireOwn(keyId);
    return super.keyDailySeries(keyId, now);
  }

  override keyTotals(keyId: string, since: string, now: number): PeriodTotals {
    this.requireOwn(keyId);
    return super.keyTotals(keyId, since, now);
  }

  override keyModels(keyId: string, since: string, now: number): Array<{ model: string; totals: SpendTotals }> {
    this.requireOwn(keyId);
    return super.keyModels(keyId, since, now);
  }

  override latestRequests(keyId: string, limit: number): RequestRow[] {
    this.requireOwn(keyId);
    return super.latestRequests(keyId, limit);
  }

  override recent429s(keyId: string, limit: number): RequestRow[] {
    this.requireOwn(keyId);
    return super.recent429s(keyId, limit);
  }
}
