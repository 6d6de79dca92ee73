/**
 * What a tenant's dashboard session reads: the same reads as an admin's
 * (SQLite's or PostgreSQL's, whichever the node uses), narrowed to the
 * tenant's keys. The directory holds only its keys and its own tenant, so
 * every page built from it (overview, keys, a key's page) lists, sums and
 * finds nothing else — another tenant's key is simply not there (404) — and
 * the totals and charts that the admin reads over every key are read over the
 * tenant's keys instead (the inner reads' tenant* reads). A key id that is
 * not the tenant's never reaches a per-key read (they refuse it as a second
 * line).
 */
import { TollgateError } from '../domain/errors.js';
import type { SpendTotals } from '../storage/spend-reads.js';
import type { Directory } from '../storage/directory.js';
import type { DashboardReads, DayPoint, HourPoint, Page, PeriodTotals, RequestRow, SpendByKey, TopRow } from '../storage/dashboard-reads.js';

function filterMap<V>(map: ReadonlyMap<string, V>, keep: ReadonlySet<string>): Map<string, V> {
  const out = new Map<string, V>();
  for (const [id, value] of map) if (keep.has(id)) out.set(id, value);
  return out;
}

/** Reads narrowed to one tenant's keys, over any inner reads. */
export class TenantScopedReads implements DashboardReads {
  readonly tenantId: string;
  private readonly inner: DashboardReads;
  private scoped: { base: Directory; directory: Directory; ids: ReadonlySet<string> } | undefined;

  constructor(inner: DashboardReads, tenantId: string) {
    this.inner = inner;
    this.tenantId = tenantId;
  }

  private scope(base: Directory): { directory: Directory; ids: ReadonlySet<string> } {
    // The inner directory is the same object until a key or tenant changes, so this is rebuilt only then.
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
    return this.scoped;
  }

  async directory(): Promise<Directory> {
    return this.scope(await this.inner.directory()).directory;
  }

  private async ownKeyIds(): Promise<ReadonlySet<string>> {
    return this.scope(await this.inner.directory()).ids;
  }

  private async requireOwn(keyId: string): Promise<void> {
    if (!(await this.ownKeyIds()).has(keyId)) throw new TollgateError('not_found', `no key with id "${keyId}"`, { param: 'id' });
  }

  private requireSelf(tenantId: string): void {
    if (tenantId !== this.tenantId) throw new TollgateError('not_found', `no tenant with id "${tenantId}"`, { param: 'tenant' });
  }

  async spendByKey(now: number): Promise<SpendByKey> {
    const all = await this.inner.spendByKey(now);
    const [ids, todayTotal, monthTotal] = await Promise.all([
      this.ownKeyIds(),
      this.inner.tenantTotals(this.tenantId, all.today, now),
      this.inner.tenantTotals(this.tenantId, all.monthStart, now),
    ]);
    return {
      today: all.today,
      monthStart: all.monthStart,
      todayTotal,
      monthTotal,
      todayByKey: filterMap(all.todayByKey, ids),
      monthByKey: filterMap(all.monthByKey, ids),
      weekCostByKey: filterMap(all.weekCostByKey, ids),
      lifetimeCostByKey: filterMap(all.lifetimeCostByKey, ids),
      lastRequestAtByKey: filterMap(all.lastRequestAtByKey, ids),
    };
  }

  async dailySeries(now: number): Promise<DayPoint[]> {
    return this.inner.tenantDailySeries(this.tenantId, now);
  }

  async hourlySeries(now: number, keyId?: string): Promise<HourPoint[]> {
    if (keyId === undefined) return this.inner.tenantHourlySeries(this.tenantId, now);
    await this.requireOwn(keyId);
    return this.inner.hourlySeries(now, keyId);
  }

  async tenantTotals(tenantId: string, since: string, now: number): Promise<PeriodTotals> {
    this.requireSelf(tenantId);
    return this.inner.tenantTotals(tenantId, since, now);
  }

  async tenantDailySeries(tenantId: string, now: number): Promise<DayPoint[]> {
    this.requireSelf(tenantId);
    return this.inner.tenantDailySeries(tenantId, now);
  }

  async tenantHourlySeries(tenantId: string, now: number): Promise<HourPoint[]> {
    this.requireSelf(tenantId);
    return this.inner.tenantHourlySeries(tenantId, now);
  }

  async keyLifetimeCost(keyId: string, now: number): Promise<number> {
    await this.requireOwn(keyId);
    return this.inner.keyLifetimeCost(keyId, now);
  }

  async keyDailySeries(keyId: string, now: number): Promise<DayPoint[]> {
    await this.requireOwn(keyId);
    return this.inner.keyDailySeries(keyId, now);
  }

  async keyTotals(keyId: string, since: string, now: number): Promise<PeriodTotals> {
    await this.requireOwn(keyId);
    return this.inner.keyTotals(keyId, since, now);
  }

  async keyModels(keyId: string, since: string, now: number): Promise<Array<{ model: string; totals: SpendTotals }>> {
    await this.requireOwn(keyId);
    return this.inner.keyModels(keyId, since, now);
  }

  async keyTop(keyId: string, by: 'user' | 'tag' | 'session', since: string, now: number, limit: number, cursor?: string): Promise<Page<TopRow>> {
    await this.requireOwn(keyId);
    return this.inner.keyTop(keyId, by, since, now, limit, cursor);
  }

  async latestRequests(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    await this.requireOwn(keyId);
    return this.inner.latestRequests(keyId, limit, cursor);
  }

  async recent429s(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    await this.requireOwn(keyId);
    return this.inner.recent429s(keyId, limit, cursor);
  }
}
