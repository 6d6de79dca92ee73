/** The keys table: sorting, filtering by tenant, status and text, paging — the same in the page and in its JSON. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeysView } from '../../../src/dashboard/index.js';
import { ADMIN_TOKEN, buildDashboardApp, recordRequest, type DashboardTestApp } from '../../support/dashboard.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
const KEYS = 120;
let test: DashboardTestApp;
let cookie: string;

beforeAll(async () => {
  test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  for (let i = 0; i < KEYS; i += 1) {
    const tenant = i % 4 === 3 ? undefined : ['acme', 'globex', 'initech'][i % 4];
    const budget = i % 5 === 0 ? { budget: { microUsd: 1_000 + i * 10, period: 'month' as const } } : {};
    const { view } = test.store.createKey({
      name: `key-${String(i).padStart(3, '0')}`,
      tenant,
      policy: { limits: [{ name: 'rpm', unit: 'requests', amount: 60, period: 'min', burst: 60 }], ...budget },
    });
    // Spend grows with i, not in name order; every 7th key has none.
    if (i % 7 !== 0)
      await recordRequest(test.ledger, {
        keyId: view.id,
        tenantId: view.tenantId,
        createdAt: NOW - 3_600_000 - i * 1000,
        costMicros: ((i * 37) % 101) * 10 + i,
      });
  }
  test.store.revokeKey('key-005');
  test.store.revokeKey('key-006');
  cookie = await test.login();
});

afterAll(() => {
  test.close();
});

async function keys(query = ''): Promise<KeysView> {
  const response = await test.request(`/admin/api/dashboard/keys${query}`, { cookie });
  expect(response.status, query).toBe(200);
  return (await response.json()) as KeysView;
}

describe('the keys table', () => {
  it('sorts by this month’s spend by default, 50 keys a page', async () => {
    const first = await keys();
    expect(first.matching).toBe(KEYS);
    expect(first.pages).toBe(3);
    expect(first.rows).toHaveLength(50);
    expect(first.text.showing).toBe('Showing 1–50 of 120 keys');
    const all = [...first.rows, ...(await keys('?page=2')).rows, ...(await keys('?page=3')).rows];
    expect(all).toHaveLength(KEYS);
    expect(new Set(all.map((row) => row.id)).size).toBe(KEYS);
    const spend = all.map((row) => row.costMonthMicros);
    expect(spend).toEqual([...spend].sort((a, b) => b - a));
    expect((await keys('?page=3')).text.showing).toBe('Showing 101–120 of 120 keys');
  });

  it('sorts by name, by spend either way, by budget used and by last use', async () => {
    const byName = (await keys('?sort=name')).rows.map((row) => row.name);
    expect(byName.slice(0, 3)).toEqual(['key-000', 'key-001', 'key-002']);
    const byNameDesc = (await keys('?sort=name&dir=desc')).rows.map((row) => row.name);
    expect(byNameDesc[0]).toBe('key-119');
    const cheapest = (await keys('?sort=month&dir=asc')).rows.map((row) => row.costMonthMicros);
    expect(cheapest).toEqual([...cheapest].sort((a, b) => a - b));
    const byBudget = (await keys('?sort=budget')).rows;
    const withBudget = byBudget.filter((row) => row.budget !== null);
    expect(withBudget).toHaveLength(24);
    expect(byBudget.slice(0, 24).every((row) => row.budget !== null)).toBe(true);
    const fractions = withBudget.map((row) => row.budget!.fraction);
    expect(fractions).toEqual([...fractions].sort((a, b) => b - a));
    const byUse = (await keys('?sort=last_used')).rows;
    const times = byUse.map((row) => row.lastUsedAt ?? -1);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(byUse[0]!.text.lastUsed).toBe('1 h ago');
  });

  it('filters by tenant, by no tenant, by status and by text', async () => {
    const tenants = (await keys()).tenants;
    const acme = tenants.find((t) => t.name === 'acme')!;
    const acmeKeys = await keys(`?tenant=${acme.id}&sort=name`);
    expect(acmeKeys.matching).toBe(30);
    expect(acmeKeys.rows.every((row) => row.tenant === 'acme')).toBe(true);
    expect((await keys('?tenant=acme')).matching).toBe(30);
    const none = await keys('?tenant=-');
    expect(none.matching).toBe(30);
    expect(none.rows.every((row) => row.tenant === null && row.text.tenant === '-')).toBe(true);
    const revoked = await keys('?status=revoked');
    expect(revoked.rows.map((row) => row.name).sort()).toEqual(['key-005', 'key-006']);
    expect((await keys('?status=active')).matching).toBe(KEYS - 2);
    expect((await keys('?q=KEY-11')).rows.map((row) => row.name).sort()).toEqual([
      'key-110',
      'key-111',
      'key-112',
      'key-113',
      'key-114',
      'key-115',
      'key-116',
      'key-117',
      'key-118',
      'key-119',
    ]);
    const nothing = await keys('?tenant=no-such-tenant');
    expect(nothing.matching).toBe(0);
    expect(nothing.text.showing).toBe('No keys match.');
  });

  it('shows limits, budget use and the prefix, never the key', async () => {
    const row = (await keys('?q=key-010')).rows[0]!;
    expect(row.prefix).toMatch(/^tg-[0-9A-Za-z]{6}$/);
    expect(row.text.limits).toBe('requests:60/min,name=rpm');
    expect(row.budget).toMatchObject({ capMicros: 1_100, period: 'month' });
    expect(row.text.budget).toMatch(/^\$0\.00\d+ of \$0\.0011 per month$/);
    const json = JSON.stringify(await keys());
    expect(json).not.toMatch(/tg-[0-9A-Za-z]{43}/);
  });

  it('says what is wrong with a bad query in JSON, and falls back to defaults on the page', async () => {
    const bad = await test.request('/admin/api/dashboard/keys?sort=price', { cookie });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: 'invalid_value', param: 'sort' });
    expect((await test.request('/admin/api/dashboard/keys?page=0', { cookie })).status).toBe(400);
    const page = await test.request('/dashboard/keys?sort=price&page=zero', { cookie });
    expect(page.status).toBe(200);
    // Past the last page: the last page.
    expect((await keys('?page=99')).query.page).toBe(3);
  });

  it('renders sort links, the tenant filter and paging links that keep the other choices', async () => {
    const html = await (await test.request('/dashboard/keys?sort=name&status=active&page=2', { cookie })).text();
    expect(html).toContain('href="/dashboard/keys?status=active&amp;sort=name&amp;dir=desc"');
    expect(html).toContain('href="/dashboard/keys?status=active&amp;sort=name&amp;page=3" rel="next"');
    expect(html).toContain('href="/dashboard/keys?status=active&amp;sort=name" rel="prev"');
    expect(html).toContain('<option value="-">(no tenant)</option>');
    expect(html).toContain('data-poll="/admin/api/dashboard/keys?status=active&amp;sort=name&amp;page=2"');
    expect(html).toContain('Showing 51–100 of 118 keys');
  });
});
