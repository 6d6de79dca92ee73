/**
 * The overview's reconciliation panel shows the newest result of each
 * provider (README "Dashboard"): with OpenAI's and Anthropic's bills both
 * read, whichever ran last does not hide the other, and a drift beyond the
 * tolerance is said so.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { OverviewView } from '../../../src/dashboard/index.js';
import type { ReconciliationReport } from '../../../src/reconcile/store.js';
import { sqliteReconciliations } from '../../../src/storage/sqlite/reconciliations.js';
import { ADMIN_TOKEN, buildDashboardApp, type DashboardTestApp } from '../../support/dashboard.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let test: DashboardTestApp;
let cookie: string;

function report(provider: string, generatedAt: number, ledgerMicros: number, billMicros: number): ReconciliationReport {
  const side = (costMicros: number) => ({ requests: 4, inputTokens: 400, cachedInputTokens: 0, outputTokens: 40, costMicros });
  return {
    provider,
    since: '2026-11-11',
    until: '2026-11-18',
    generatedAt,
    byProject: false,
    tolerancePercent: 1,
    rows: [],
    differences: 0,
    priceFlags: [],
    unattributedCosts: [],
    totals: { ledger: side(ledgerMicros), provider: side(billMicros) },
  };
}

beforeAll(async () => {
  test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  const results = sqliteReconciliations<ReconciliationReport>(test.db.database);
  await results.save(report('openai', NOW - 3_600_000, 1_000_000, 1_000_000));
  await results.save(report('anthropic', NOW - 1_800_000, 2_000_000, 3_000_000));
  await results.save(report('openai', NOW - 600_000, 1_500_000, 1_500_000));
  cookie = await test.login();
});

afterAll(() => {
  test.close();
});

it('lists the newest result of each provider, by provider, with the drift beyond the tolerance', async () => {
  const view = (await (await test.request('/admin/api/dashboard/overview', { cookie })).json()) as OverviewView;
  expect(view.reconciliations!.map((r) => [r.provider, r.ranAt, r.ledgerCostMicros, r.driftExceeded, r.driftPercent])).toEqual([
    ['anthropic', NOW - 1_800_000, 2_000_000, true, 33.33],
    ['openai', NOW - 600_000, 1_500_000, false, 0],
  ]);
  const html = await (await test.request('/dashboard', { cookie })).text();
  expect(html).toContain('data-reconcile-provider="anthropic"');
  expect(html).toContain('data-reconcile-provider="openai"');
  expect(html).toContain('drift +33.33%, beyond the tolerance');
});
