/**
 * The dashboard's numbers are `tollgate spend --json`'s numbers, including
 * where they come from the monthly, all-keys daily and lifetime rollups
 * rather than from querySpend: after a late settlement of an old pending
 * request, across midnight, in a new process, and per key.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpendReport, SpendTotals } from '../../../src/storage/spend-reads.js';
import { createDashboardApiRoutes, type KeyPageView, type OverviewView } from '../../../src/dashboard/index.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { cli } from '../../support/cli.js';
import { ADMIN_TOKEN, buildDashboardApp, recordRejection, recordRequest, settleRequest, type DashboardTestApp } from '../../support/dashboard.js';
import { openDashboardReads } from '../../../src/storage/index.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-18T15:00:00Z');
const at = (iso: string) => Date.parse(iso);

let test: DashboardTestApp;
let keys: { alpha: string; beta: string; gamma: string };
let oldPending: string;

beforeEach(async () => {
  test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  const create = (name: string, tenant: string | undefined, budget?: { microUsd: number; period: 'day' | 'month' | 'total' }) =>
    test.store.createKey({ name, tenant, policy: { limits: [], ...(budget ? { budget } : {}) } }).view.id;
  keys = {
    alpha: create('alpha', 'acme', { microUsd: 1_000, period: 'day' }),
    beta: create('beta', 'acme', { microUsd: 50_000, period: 'month' }),
    gamma: create('gamma', undefined, { microUsd: 100_000, period: 'total' }),
  };
  const w = test.ledger;
  // Last month (in the 90-day chart and in gamma's lifetime, not in this month).
  await recordRequest(w, { keyId: keys.gamma, createdAt: at('2026-10-30T10:00:00Z'), costMicros: 7_000, promptTokens: 500, completionTokens: 40 });
  // Earlier this month: closed days.
  await recordRequest(w, { keyId: keys.alpha, createdAt: at('2026-11-01T00:00:00Z'), costMicros: 1_234, model: 'gpt-4o' });
  await recordRequest(w, { keyId: keys.beta, createdAt: at('2026-11-10T12:00:00Z'), costMicros: 20_000, promptTokens: 1_000, completionTokens: 2_000 });
  await recordRequest(w, { keyId: keys.gamma, createdAt: at('2026-11-10T13:00:00Z'), costMicros: 9, status: 'upstream_error', httpStatus: 500 });
  oldPending = await recordRequest(w, { keyId: keys.beta, createdAt: at('2026-11-10T23:59:00Z'), status: 'pending', estCostMicros: 5_000 });
  recordRejection(w, { keyId: keys.alpha, createdAt: at('2026-11-17T09:00:00Z'), reason: 'budget' });
  // Today.
  await recordRequest(w, { keyId: keys.alpha, createdAt: at('2026-11-18T08:00:00Z'), costMicros: 800 });
  await recordRequest(w, { keyId: keys.alpha, createdAt: at('2026-11-18T14:00:00Z'), costMicros: 450, model: 'gpt-4o' });
  await recordRequest(w, { keyId: keys.gamma, createdAt: at('2026-11-18T14:30:00Z'), status: 'pending', estCostMicros: 3_333 });
  recordRejection(w, { keyId: keys.beta, createdAt: at('2026-11-18T14:40:00Z'), reason: 'rate_limit' });
});

afterEach(() => {
  test.close();
});

async function spend(...args: string[]): Promise<SpendReport> {
  const result = await cli('--db', test.db.path, 'spend', '--json', ...args);
  expect(result.code, result.stderr).toBe(0);
  return result.json<SpendReport>();
}

async function overview(): Promise<OverviewView> {
  const response = await test.request('/admin/api/dashboard/overview', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as OverviewView;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Compares the dashboard's totals with the CLI's for today and this month at the test clock. */
async function expectTotalsMatchCli(view: OverviewView): Promise<void> {
  const today = day(test.clock.now);
  const cliToday = await spend('--since', today, '--until', today, '--by', 'total');
  const cliMonth = await spend('--since', `${today.slice(0, 7)}-01`, '--until', today, '--by', 'total');
  expect(view.totals.today).toEqual({ ...cliToday.total, pending: cliToday.pending });
  expect(view.totals.month).toEqual({ ...cliMonth.total, pending: cliMonth.pending });
}

describe('the overview', () => {
  it('shows the same totals as tollgate spend for today and this month, formatted for people', async () => {
    const view = await overview();
    await expectTotalsMatchCli(view);
    expect(view.totals.today.costMicros).toBe(800 + 450 + 3_333);
    expect(view.totals.month.costMicros).toBe(1_234 + 20_000 + 9 + 5_000 + 800 + 450 + 3_333);
    expect(view.totals.today.rejectedRateLimit).toBe(1);
    expect(view.totals.month.rejectedBudget).toBe(1);
    expect(view.text.spendToday).toBe('$0.004583');
    // As precise as the top keys' rows beside it ($0.03, $0.003342, $0.002484), so they add up to it.
    expect(view.text.spendMonth).toBe('$0.030826');
    expect(view.text.rateLimitedToday).toBe('1');
    const page = await (await test.request('/dashboard', { cookie: await test.login() })).text();
    expect(page).toContain('$0.004583');
    expect(page).toContain('>$0.030826<');
  });

  it('ranks the top keys by this month’s spend, as spend --by key does', async () => {
    const view = await overview();
    const today = day(NOW);
    const byKey = await spend('--since', `${today.slice(0, 7)}-01`, '--until', today, '--by', 'key');
    expect(view.topKeys.map((k) => [k.id, k.costMonthMicros])).toEqual(byKey.rows.map((row) => [row.keyId, row.costMicros]));
    expect(view.topKeys[0]).toMatchObject({ name: 'beta', tenant: 'acme', text: { spendMonth: '$0.03' } });
  });

  it('charts the last 90 days as spend --by day counts them, and the last 48 hours by hour', async () => {
    const view = await overview();
    const byDay = await spend('--since', day(NOW - 89 * DAY), '--until', day(NOW), '--by', 'day');
    const chart = view.charts.daily;
    expect(chart.x).toHaveLength(90);
    const spendSeries = chart.series.find((s) => s.label === 'Spend')!.values;
    const expected = new Map(byDay.rows.map((row) => [row.group, row.costMicros]));
    chart.x.forEach((x, i) => expect(spendSeries[i], day(x * 1000)).toBe(expected.get(day(x * 1000)) ?? 0));
    const hourly = view.charts.hourly;
    expect(hourly.x).toHaveLength(48);
    const lastHours = hourly.series.find((s) => s.label === 'Spend')!.values.slice(-8);
    expect(lastHours.reduce((a, b) => a + b, 0)).toBe(800 + 450 + 3_333);
  });

  it('shows budget use for each kind of budget period', async () => {
    const view = await overview();
    const byName = new Map(view.budgets.map((b) => [b.name, b]));
    expect(byName.get('alpha')).toMatchObject({ spentMicros: 1_250, capMicros: 1_000, level: 'over', text: { percent: '125%', period: 'per day' } });
    expect(byName.get('beta')).toMatchObject({ spentMicros: 25_000, level: 'ok', text: { percent: '50%', period: 'per month' } });
    expect(byName.get('gamma')).toMatchObject({ spentMicros: 7_000 + 9 + 3_333, text: { period: 'in total' } });
    expect(view.text.budgetsOver).toBe('1 of 3 over budget');
  });

  it('follows a late settlement of an old pending request (filed under the day and month it started in)', async () => {
    await expectTotalsMatchCli(await overview());
    settleRequest(test.ledger, oldPending, { createdAt: at('2026-11-10T23:59:00Z'), costMicros: 4_321 });
    const view = await overview();
    await expectTotalsMatchCli(view);
    expect(view.totals.month.costMicros).toBe(1_234 + 20_000 + 9 + 4_321 + 800 + 450 + 3_333);
    expect(view.totals.month.pending).toBe(1);
  });

  it('stays equal to the CLI across midnight, while yesterday is still read live and after it closes', async () => {
    test.clock.now = at('2026-11-19T00:05:00Z');
    // A request that started before midnight and landed just after it.
    await recordRequest(test.ledger, { keyId: keys.alpha, createdAt: at('2026-11-18T23:59:59Z'), costMicros: 61 });
    let view = await overview();
    await expectTotalsMatchCli(view);
    expect(view.totals.today.requests).toBe(0);
    await recordRequest(test.ledger, { keyId: keys.beta, createdAt: at('2026-11-19T00:06:00Z'), costMicros: 5 });
    test.clock.now = at('2026-11-19T00:30:00Z');
    view = await overview();
    await expectTotalsMatchCli(view);
    expect(view.totals.today.costMicros).toBe(5);
    // And into a new month: the month restarts.
    test.clock.now = at('2026-12-01T09:00:00Z');
    view = await overview();
    await expectTotalsMatchCli(view);
    expect(view.totals.month.costMicros).toBe(0);
  });

  it('leaves out days after today, as spend does, when rows were filed under them (a clock set back)', async () => {
    await recordRequest(test.ledger, { keyId: keys.gamma, createdAt: at('2026-11-19T10:00:00Z'), costMicros: 90_000 });
    await recordRequest(test.ledger, { keyId: keys.beta, createdAt: at('2026-12-01T10:00:00Z'), costMicros: 80_000 });
    const view = await overview();
    await expectTotalsMatchCli(view);
    expect(view.totals.month.costMicros).toBe(1_234 + 20_000 + 9 + 5_000 + 800 + 450 + 3_333);
    expect(view.budgets.find((b) => b.name === 'gamma')).toMatchObject({ spentMicros: 7_000 + 9 + 3_333 });
    const gamma = (await (
      await test.request(`/admin/api/dashboard/keys/${keys.gamma}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as KeyPageView;
    expect(gamma.budget).toMatchObject({ spentMicros: 7_000 + 9 + 3_333 });
  });

  it('shows the same totals on the first overview of a new process, with nothing summed ahead', async () => {
    const second = openDatabase(test.db.path);
    try {
      const api = createDashboardApiRoutes({
        database: second,
        reads: openDashboardReads({ kind: 'sqlite', database: second }),
        adminToken: ADMIN_TOKEN,
        now: () => test.clock.now,
      });
      const response = await api.request('/overview', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(response.status).toBe(200);
      await expectTotalsMatchCli((await response.json()) as OverviewView);
    } finally {
      second.close();
    }
  });
});

describe('a key page', () => {
  it('shows the key’s totals, by model, as spend --key does', async () => {
    const response = await test.request(`/admin/api/dashboard/keys/${keys.alpha}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const view = (await response.json()) as KeyPageView;
    const today = day(NOW);
    const cliToday = await spend('--key', keys.alpha, '--since', today, '--until', today, '--by', 'total');
    const cliModels = await spend('--key', keys.alpha, '--since', `${today.slice(0, 7)}-01`, '--until', today, '--by', 'model');
    expect(view.totals.today).toEqual({ ...cliToday.total, pending: cliToday.pending });
    const models = (rows: ReadonlyArray<{ model?: string; group?: string; totals?: SpendTotals; costMicros?: number }>) =>
      rows.map((r) => [r.model ?? r.group, r.totals?.costMicros ?? r.costMicros]);
    expect(models(view.models)).toEqual(models(cliModels.rows));
    expect(view.budget).toMatchObject({ spentMicros: 1_250, level: 'over' });
    expect(view.recent429).toHaveLength(1);
    expect(view.recent429[0]).toMatchObject({ errorCode: 'insufficient_quota', tone: 'rejected', text: { outcome: 'rejected · insufficient_quota' } });
    expect(view.latest.map((r) => r.costMicros)).toEqual([450, 800, 0, 1_234]);
    expect(view.latest[0]).toMatchObject({ model: 'gpt-4o', text: { when: '1 h ago', cost: '$0.00045', latency: '300 ms', tokens: '10 → 20' } });
    expect(view.limitsLive).toBe(false);
  });
});
