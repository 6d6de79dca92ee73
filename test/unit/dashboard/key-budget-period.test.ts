/** A key's page shows the spend of its budget's own period: a weekly budget counts this week only. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPageView } from '../../../src/dashboard/index.js';
import { ADMIN_TOKEN, buildDashboardApp, recordRequest, type DashboardTestApp } from '../../support/dashboard.js';

// A Wednesday: the week (UTC, from Monday) began on 2026-11-16.
const NOW = Date.parse('2026-11-18T15:00:00Z');
let test: DashboardTestApp;
let cookie: string;

beforeAll(async () => {
  test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  for (const [name, period] of [
    ['weekly', 'week'],
    ['lifetime', 'total'],
  ] as const) {
    const { view } = test.store.createKey({ name, policy: { limits: [], budget: { microUsd: 10_000, period } } });
    // Last week (Tuesday 2026-11-10), then this week's Monday and today.
    for (const [at, costMicros] of [
      ['2026-11-10T12:00:00Z', 5_000],
      ['2026-11-16T00:30:00Z', 300],
      ['2026-11-18T14:00:00Z', 200],
    ] as const) {
      await recordRequest(test.ledger, { keyId: view.id, tenantId: view.tenantId, createdAt: Date.parse(at), costMicros });
    }
  }
  cookie = await test.login();
});

afterAll(() => {
  test.close();
});

async function budgetSpent(name: string): Promise<number | undefined> {
  const key = test.store.listKeys().find((row) => row.name === name);
  const response = await test.request(`/admin/api/dashboard/keys/${key?.id ?? 'missing'}`, { cookie });
  expect(response.status).toBe(200);
  return ((await response.json()) as KeyPageView).budget?.spentMicros;
}

describe("a key page's budget bar", () => {
  it('counts a weekly budget from this week’s Monday, not the key’s lifetime', async () => {
    expect(await budgetSpent('weekly')).toBe(500);
  });

  it('counts a budget in total over the whole lifetime', async () => {
    expect(await budgetSpent('lifetime')).toBe(5_500);
  });
});
