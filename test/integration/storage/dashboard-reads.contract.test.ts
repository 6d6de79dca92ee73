/**
 * The dashboard's reads (src/storage/dashboard-reads.ts) over both backends:
 * the same rows — pending, settled late, refused, across days, months and a
 * clock set back — build every page with the same numbers (the overview, the
 * key lists, each key's page, a tenant's narrowed view), equal to the spend
 * report over the same ranges, and the figures a person reads are the sums
 * of the rows.
 */
import { beforeAll, expect, it } from 'vitest';
import { buildKeyPage } from '../../../src/dashboard/key-view.js';
import { buildKeys } from '../../../src/dashboard/keys-page.js';
import { parseKeysQuery } from '../../../src/dashboard/keys-query.js';
import { buildOverview } from '../../../src/dashboard/overview.js';
import { TenantScopedReads } from '../../../src/dashboard/tenant-scope.js';
import type { KeyPageView, OverviewView } from '../../../src/dashboard/index.js';
import type { Backend } from '../../../src/storage/backend.js';
import type { DashboardReads } from '../../../src/storage/dashboard-reads.js';
import { openDashboardReads } from '../../../src/storage/index.js';
import { openSpendReads } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';
import { recordRejection, recordRequest, settleRequest } from '../../support/dashboard.js';
import { seedBackend } from '../../support/read-seed.js';
import { sameOnBoth } from '../../support/same-on-both.js';

const at = (iso: string) => Date.parse(iso);
const NOW = at('2026-11-18T15:00:00Z');
/** When the keys were made (a fixed clock: their creation time is on the pages). */
const KEYS_MADE = at('2026-10-01T08:00:00Z');
const check = sameOnBoth(new Map());

/** Every view the dashboard builds at `now`, as the JSON endpoints return them. */
async function everyView(reads: DashboardReads, now: number, keyIds: readonly string[]): Promise<unknown> {
  const ctx = { reads, now };
  return JSON.parse(
    JSON.stringify({
      overview: await buildOverview(ctx),
      keysBySpend: await buildKeys(ctx, parseKeysQuery({}, true)),
      keysByName: await buildKeys(ctx, parseKeysQuery({ sort: 'name' }, true)),
      keysOfAcme: await buildKeys(ctx, parseKeysQuery({ tenant: 'acme', sort: 'last_used' }, true)),
      keys: await Promise.all(keyIds.map((id) => buildKeyPage(ctx, id))),
    }),
  ) as unknown;
}

describeBackends('dashboard reads', (fixture) => {
  let backend: Backend;
  let reads: DashboardReads;
  const keys = { alpha: '', beta: '', gamma: '', delta: '' };
  let acme = '';
  let zeta = '';
  let oldPending = '';
  const names = () => ({
    [keys.alpha]: 'key:alpha',
    [keys.beta]: 'key:beta',
    [keys.gamma]: 'key:gamma',
    [keys.delta]: 'key:delta',
    [acme]: 'tenant:acme',
    [zeta]: 'tenant:zeta-co',
  });
  // Request ids are made per run: named by the order they were written.
  const requestIds: string[] = [];
  const ids = () => ({ ...names(), ...Object.fromEntries(requestIds.map((id, i) => [id, `request:${i}`])) });

  beforeAll(async () => {
    backend = await fixture.fresh();
    requestIds.length = 0;
    await seedBackend(
      backend,
      async ({ store, writer }) => {
        const create = (name: string, tenant: string | undefined, budget: { microUsd: number; period: 'day' | 'week' | 'month' | 'total' }) =>
          store.createKey({ name, tenant, policy: { limits: [], budget } }).view.id;
        // Upper and lower case: both backends list keys in the same order.
        keys.alpha = create('alpha', 'acme', { microUsd: 1_000, period: 'day' });
        keys.beta = create('Beta', 'acme', { microUsd: 50_000, period: 'month' });
        keys.gamma = create('gamma', undefined, { microUsd: 100_000, period: 'total' });
        keys.delta = create('delta', 'zeta-co', { microUsd: 9_000, period: 'week' });
        acme = store.getTenant('acme').id;
        zeta = store.getTenant('zeta-co').id;
        const w = writer;
        const record = async (spec: Parameters<typeof recordRequest>[1]) => {
          const id = await recordRequest(w, spec);
          requestIds.push(id);
          return id;
        };
        await record({ keyId: keys.gamma, createdAt: at('2026-10-30T10:00:00Z'), costMicros: 7_000, promptTokens: 500, completionTokens: 40 });
        await record({ keyId: keys.alpha, createdAt: at('2026-11-01T00:00:00Z'), costMicros: 1_234, model: 'gpt-4o' });
        await record({ keyId: keys.beta, createdAt: at('2026-11-10T12:00:00Z'), costMicros: 20_000, promptTokens: 1_000, completionTokens: 2_000 });
        await record({ keyId: keys.gamma, createdAt: at('2026-11-10T13:00:00Z'), costMicros: 9, status: 'upstream_error', httpStatus: 500 });
        // As the proxy records it, with its key's tenant (a tenant's in-flight count reads it).
        oldPending = await record({ keyId: keys.beta, tenantId: acme, createdAt: at('2026-11-10T23:59:00Z'), status: 'pending', estCostMicros: 5_000 });
        recordRejection(w, { keyId: keys.alpha, createdAt: at('2026-11-17T09:00:00Z'), reason: 'budget' });
        await record({ keyId: keys.delta, createdAt: at('2026-11-17T10:00:00Z'), costMicros: 4_000 });
        await record({ keyId: keys.alpha, createdAt: at('2026-11-18T08:00:00Z'), costMicros: 800 });
        await record({ keyId: keys.alpha, createdAt: at('2026-11-18T14:00:00Z'), costMicros: 450, model: 'gpt-4o' });
        await record({ keyId: keys.gamma, createdAt: at('2026-11-18T14:30:00Z'), status: 'pending', estCostMicros: 3_333 });
        recordRejection(w, { keyId: keys.beta, createdAt: at('2026-11-18T14:40:00Z'), reason: 'rate_limit' });
        // Filed after today (a clock set back): left out of today and the month, as spend does.
        await record({ keyId: keys.gamma, createdAt: at('2026-11-19T10:00:00Z'), costMicros: 90_000 });
        await record({ keyId: keys.beta, createdAt: at('2026-12-01T10:00:00Z'), costMicros: 80_000 });
      },
      () => KEYS_MADE,
    );
    reads = openDashboardReads(backend);
  });

  /** `tollgate spend` over ranges in and across months, for every grouping: the same on both backends. */
  async function expectSameSpend(label: string): Promise<void> {
    const spend = openSpendReads(backend);
    const ranges: Array<[string, string]> = [
      ['2026-11-01', '2026-11-18'],
      ['2026-10-01', '2026-11-18'],
      ['2026-10-15', '2026-11-30'],
      ['2026-10-30', '2026-10-30'],
      ['2026-09-01', '2026-12-31'],
      ['2026-10-31', '2026-12-01'],
    ];
    for (const [since, until] of ranges) {
      for (const scope of [{}, { keyId: keys.beta }, { tenantId: acme }]) {
        for (const by of ['day', 'model', 'key', 'tenant', 'total'] as const) {
          const query = { ...scope, since, until, by };
          check(fixture.name, `${label} spend ${JSON.stringify(query)}`, await spend.spend(query, NOW), names());
        }
      }
    }
  }

  it('builds every page with the same numbers on both backends, the sums of the rows', async () => {
    const all = Object.values(keys);
    const views = await everyView(reads, NOW, all);
    check(fixture.name, 'views', views, ids());
    await expectSameSpend('first');
    // Not two empty pages: the numbers a person reads.
    const overview = (views as { overview: OverviewView }).overview;
    expect(overview.totals.today.costMicros).toBe(800 + 450 + 3_333);
    expect(overview.totals.month.costMicros).toBe(1_234 + 20_000 + 9 + 5_000 + 4_000 + 800 + 450 + 3_333);
    expect(overview.totals.month.pending).toBe(2);
    expect(overview.budgets.map((b) => [b.name, b.spentMicros])).toContainEqual(['gamma', 7_000 + 9 + 3_333]);
    expect((views as { keysByName: { rows: Array<{ name: string }> } }).keysByName.rows.map((row) => row.name)).toEqual(['alpha', 'Beta', 'delta', 'gamma']);
    // The overview's today equals `tollgate spend` for today.
    const today = await openSpendReads(backend).spend({ since: '2026-11-18', until: '2026-11-18', by: 'total' }, NOW);
    expect(overview.totals.today).toEqual({ ...today.total, pending: today.pending });
  });

  it("narrows a tenant's session to its own keys and spend, the same on both backends", async () => {
    const all = Object.values(keys);
    const acmeViews = (await everyView(new TenantScopedReads(reads, acme), NOW, all)) as { overview: OverviewView; keys: Array<KeyPageView | null> };
    check(fixture.name, 'acme views', acmeViews, ids());
    expect(acmeViews.overview.totals.today.costMicros).toBe(800 + 450);
    expect(acmeViews.overview.totals.month.costMicros).toBe(1_234 + 20_000 + 5_000 + 800 + 450);
    expect(acmeViews.overview.totals.month.pending).toBe(1);
    expect(acmeViews.keys.map((view) => view?.key.name ?? null)).toEqual(['alpha', 'Beta', null, null]);
    await expect(new TenantScopedReads(reads, acme).latestRequests(keys.gamma, 10)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('answers the lists and series of a key the same on both backends, in pages', async () => {
    const first = await reads.latestRequests(keys.alpha, 2);
    expect(first.rows.map((row) => row.costMicros)).toEqual([450, 800]);
    expect(first.hasMore).toBe(true);
    const rest = await reads.latestRequests(keys.alpha, 2, first.nextCursor!);
    expect(rest.rows.map((row) => [row.status, row.httpStatus])).toEqual([
      ['rejected', 429],
      ['ok', 200],
    ]);
    expect(rest.hasMore).toBe(false);
    const refused = await reads.recent429s(keys.beta, 10);
    expect(refused.rows.map((row) => row.createdAt)).toEqual([at('2026-11-18T14:40:00Z')]);
    expect(await reads.keyLifetimeCost(keys.gamma, NOW)).toBe(7_000 + 9 + 3_333);
    const answers = {
      first,
      rest,
      refused,
      lifetime: await reads.keyLifetimeCost(keys.beta, NOW),
      hours: await reads.hourlySeries(NOW, keys.alpha),
      allHours: await reads.hourlySeries(NOW),
      days: await reads.keyDailySeries(keys.gamma, NOW),
      tenantDays: await reads.tenantDailySeries(acme, NOW),
      tenantHours: await reads.tenantHourlySeries(acme, NOW),
      tenantTotals: await reads.tenantTotals(acme, '2026-11-01', NOW),
      keyTotals: await reads.keyTotals(keys.beta, '2026-11-01', NOW),
      models: await reads.keyModels(keys.alpha, '2026-11-01', NOW),
    };
    expect(answers.tenantTotals).toMatchObject({ costMicros: 1_234 + 20_000 + 5_000 + 800 + 450, pending: 1 });
    expect(answers.models.map((row) => [row.model, row.totals.costMicros])).toEqual([
      ['gpt-4o', 1_234 + 450],
      ['gpt-4o-mini', 800],
    ]);
    check(fixture.name, 'key lists', answers, ids());
  });

  it('stays the same on both backends after a late settlement, at midnight and in a new month', async () => {
    await seedBackend(backend, async ({ writer }) => settleRequest(writer, oldPending, { createdAt: at('2026-11-10T23:59:00Z'), costMicros: 4_321 }));
    const all = Object.values(keys);
    for (const later of [NOW, at('2026-11-19T00:30:00Z'), at('2026-12-01T09:00:00Z')]) {
      check(fixture.name, `later ${later}`, await everyView(openDashboardReads(backend), later, all), ids());
    }
    const overview = (await buildOverview({ reads: openDashboardReads(backend), now: NOW })) as OverviewView;
    expect(overview.totals.month.costMicros).toBe(1_234 + 20_000 + 9 + 4_321 + 4_000 + 800 + 450 + 3_333);
    expect(overview.totals.month.pending).toBe(1);
    await expectSameSpend('settled');
  });
});
