/**
 * A tenant's read-only dashboard token, over HTTP in-process: it logs in;
 * every dashboard page, every JSON endpoint the pages poll and every export
 * they link shows the tenant's own keys, spend and budgets and nothing of
 * another tenant's (their keys are 404, never listed, never summed); it
 * writes nothing; revoking or expiring the token ends its session at once;
 * and its cookie opens nothing of the operator's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteDashboardTokens } from '../../../src/storage/sqlite/tenant-tokens.js';
import type { DashboardTokenStore } from '../../../src/storage/tenant-tokens.js';
import { parseCsv } from '../../support/csv.js';
import { buildDashboardApp, recordRequest, type DashboardTestApp } from '../../support/dashboard.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let test: DashboardTestApp;
let tokens: DashboardTokenStore;
let tenantCookie: string;
let adminCookie: string;
const ids: Record<string, string> = {};
const prefixes: Record<string, string> = {};
let acmeId: string;
let globexId: string;

/** Costs in µUSD: acme's keys spend 1,000 + 2,000, globex's 40,000, the key without a tenant 500,000. */
const SPEND: Record<string, { tenant?: string; cost: number; model: string }> = {
  'acme-search': { tenant: 'acme', cost: 1_000, model: 'gpt-4o-mini' },
  'acme-chat': { tenant: 'acme', cost: 2_000, model: 'gpt-4o' },
  'globex-secret-project': { tenant: 'globex', cost: 40_000, model: 'gpt-4.1' },
  'untenanted-internal': { cost: 500_000, model: 'o4-mini' },
};
const FOREIGN = ['globex-secret-project', 'untenanted-internal'];

beforeAll(async () => {
  test = buildDashboardApp({ adminToken: 'tenant-scope-admin-token-0123456789', now: NOW });
  for (const [name, spec] of Object.entries(SPEND)) {
    const budget = { microUsd: 1_000_000, period: 'month' as const };
    test.issueKey(name, { limits: [], budget }, spec.tenant === undefined ? {} : { tenant: spec.tenant });
    const key = test.store.getKey(name);
    ids[name] = key.id;
    prefixes[name] = key.prefix;
    await recordRequest(test.ledger, { keyId: key.id, tenantId: key.tenantId ?? null, createdAt: NOW - 3_600_000, model: spec.model, costMicros: spec.cost });
  }
  acmeId = test.store.getTenant('acme').id;
  globexId = test.store.getTenant('globex').id;
  test.store.updateTenant('globex', { budget: { microUsd: 9_000_000, period: 'month' } });
  tokens = sqliteDashboardTokens(test.db.database);
  const issued = await tokens.create({ tenant: 'acme', label: 'acme finance' }, NOW);
  tenantCookie = await test.login(issued.token);
  adminCookie = await test.login('tenant-scope-admin-token-0123456789');
});
afterAll(() => test.close());

const get = (path: string, cookie = tenantCookie) => test.request(path, { cookie });
const text = async (path: string, cookie = tenantCookie) => {
  const response = await get(path, cookie);
  return { status: response.status, body: await response.text() };
};

/** Nothing of another tenant: names, ids, prefixes. */
function expectNoForeign(body: string): void {
  for (const name of FOREIGN) {
    expect(body).not.toContain(name);
    expect(body).not.toContain(ids[name]!);
    expect(body).not.toContain(prefixes[name]!);
  }
  expect(body).not.toContain(globexId);
  expect(body).not.toContain('globex');
}

describe('pages', () => {
  it('the overview shows the tenant, its keys, spend and budgets only', async () => {
    const { status, body } = await text('/dashboard');
    expect(status).toBe(200);
    expect(body).toContain('of tenant acme');
    expect(body).toContain('acme-search');
    expect(body).toContain('acme-chat');
    expect(body).toContain('$0.003'); // 1,000 + 2,000 µUSD today and this month
    expectNoForeign(body);
    expect(body).not.toContain('Ledger vs the provider');
  });

  it('the keys table lists only its keys, whatever the tenant filter says', async () => {
    for (const path of [
      '/dashboard/keys',
      `/dashboard/keys?tenant=${globexId}`,
      '/dashboard/keys?tenant=globex',
      '/dashboard/keys?q=globex',
      '/dashboard/keys?tenant=-',
    ]) {
      const { status, body } = await text(path);
      expect(status).toBe(200);
      // The filter the tenant typed is echoed back in the form; nothing else of globex may be there.
      expectNoForeign(body.replaceAll(globexId, '').replaceAll('globex', ''));
      expect(body).not.toContain('globex-secret-project');
      const json = (await (await get(`/admin/api/dashboard${path.slice('/dashboard'.length)}`)).json()) as {
        rows: Array<{ name: string }>;
        tenants: Array<{ name: string }>;
      };
      expect(json.rows.every((row) => row.name.startsWith('acme-'))).toBe(true);
      expect(json.tenants.map((t) => t.name)).toEqual(['acme']);
    }
    expect((await text('/dashboard/keys')).body).toContain('acme-chat');
  });

  it("another tenant's key page is 404, its own is there", async () => {
    for (const name of FOREIGN) {
      const { status, body } = await text(`/dashboard/keys/${ids[name]}`);
      expect(status).toBe(404);
      expect(body).not.toContain(name);
    }
    const own = await text(`/dashboard/keys/${ids['acme-search']}`);
    expect(own.status).toBe(200);
    expect(own.body).toContain('acme-search');
  });
});

describe('the JSON the pages poll', () => {
  it('overview: totals, top keys and budgets are the tenant’s', async () => {
    const response = await get('/admin/api/dashboard/overview');
    expect(response.status).toBe(200);
    const view = (await response.json()) as {
      totals: { today: { costMicros: number; requests: number }; month: { costMicros: number } };
      topKeys: Array<{ name: string }>;
      budgets: Array<{ name: string }>;
      tenant: { name: string };
      reconciliations: unknown;
      charts: Record<'hourly' | 'daily', { series: Array<{ label: string; values: number[] }> }>;
    };
    expect(view.totals.today.costMicros).toBe(3_000);
    expect(view.totals.today.requests).toBe(2);
    expect(view.totals.month.costMicros).toBe(3_000);
    expect(view.topKeys.map((k) => k.name).sort()).toEqual(['acme-chat', 'acme-search']);
    expect(view.budgets.map((b) => b.name).sort()).toEqual(['acme-chat', 'acme-search']);
    expect(view.tenant.name).toBe('acme');
    expect(view.reconciliations).toBeNull();
    expectNoForeign(JSON.stringify(view));
    // The charts sum the tenant's keys too (over every key they would hold 543,000 µUSD).
    for (const chart of [view.charts.hourly, view.charts.daily]) {
      const spend = chart.series.find((s) => s.label === 'Spend')!.values;
      expect(spend.reduce((a, b) => a + b, 0)).toBe(3_000);
    }
  });

  it("keys and key pages: another tenant's key is 404", async () => {
    const keys = (await (await get('/admin/api/dashboard/keys?tenant=' + globexId)).json()) as { rows: unknown[]; tenants: unknown[] };
    expect(keys.rows).toEqual([]);
    expectNoForeign(JSON.stringify({ ...keys, query: undefined }));
    for (const name of FOREIGN) {
      const response = await get(`/admin/api/dashboard/keys/${ids[name]}`);
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain(name);
    }
    expect((await get(`/admin/api/dashboard/keys/${ids['acme-chat']}`)).status).toBe(200);
  });
});

describe('the admin API reads a tenant session reaches', () => {
  it('keys and tenants: its own, and 404 for any other by id, name or prefix', async () => {
    const list = (await (await get('/admin/api/keys?all=1')).json()) as { data: Array<{ name: string }> };
    expect(list.data.map((k) => k.name).sort()).toEqual(['acme-chat', 'acme-search']);
    for (const name of FOREIGN) {
      for (const ref of [ids[name]!, name, prefixes[name]!]) {
        const response = await get(`/admin/api/keys/${encodeURIComponent(ref)}`);
        expect(response.status).toBe(404);
        expectNoForeign(await response.text());
      }
    }
    expect((await get('/admin/api/keys/acme-chat')).status).toBe(200);
    const tenants = (await (await get('/admin/api/tenants')).json()) as { data: Array<{ name: string }> };
    expect(tenants.data.map((t) => t.name)).toEqual(['acme']);
    expect((await get('/admin/api/tenants/globex')).status).toBe(404);
    expect((await get(`/admin/api/tenants/${globexId}`)).status).toBe(404);
    expect((await get(`/admin/api/tenants/${acmeId}`)).status).toBe(200);
  });

  it('spend, as JSON and CSV, by every grouping: the tenant’s numbers only', async () => {
    for (const by of ['day', 'model', 'key', 'tenant', 'total']) {
      const json = await get(`/admin/api/spend?since=month&by=${by}`);
      expect(json.status).toBe(200);
      const report = (await json.json()) as { total: { costMicros: number } };
      expect(report.total.costMicros).toBe(3_000);
      expectNoForeign(JSON.stringify(report));
      const csv = await get(`/admin/api/spend.csv?since=month&by=${by}`);
      expect(csv.status).toBe(200);
      const body = await csv.text();
      expectNoForeign(body);
      if (by !== 'total') {
        const records = parseCsv(body);
        const costColumn = records[0]!.indexOf('cost_usd');
        const sum = records.slice(1).reduce((total, record) => total + Math.round(Number(record[costColumn]) * 1e6), 0);
        expect(sum).toBe(3_000);
      }
    }
    for (const path of [
      '/admin/api/spend?tenant=globex',
      `/admin/api/spend?key=${ids['globex-secret-project']}`,
      '/admin/api/spend.csv?key=untenanted-internal',
    ]) {
      const response = await get(path);
      expect(response.status).toBe(404);
      expectNoForeign(await response.text());
    }
  });

  it('ledger exports, CSV and NDJSON: only its rows', async () => {
    for (const format of ['csv', 'ndjson']) {
      const response = await get(`/admin/api/ledger.${format}?since=7d`);
      expect(response.status).toBe(200);
      const body = await response.text();
      expectNoForeign(body);
      expect(body).toContain(ids['acme-search']);
      expect(body).toContain(ids['acme-chat']);
      const forced = await get(`/admin/api/ledger.${format}?since=7d&tenant=globex`);
      expect(forced.status).toBe(404);
      expect((await get(`/admin/api/ledger.${format}?since=7d&key=globex-secret-project`)).status).toBe(404);
    }
  });

  it('writes nothing: every write is refused and changes nothing', async () => {
    const before = test.store.getKey('acme-chat');
    const attempts: Array<[string, string, unknown]> = [
      ['POST', '/admin/api/keys', { name: 'sneaky', tenant: 'acme' }],
      ['PATCH', '/admin/api/keys/acme-chat', { name: 'renamed' }],
      ['POST', '/admin/api/keys/acme-chat/revoke', undefined],
      ['POST', '/admin/api/keys/acme-chat/rotate', undefined],
      ['PATCH', '/admin/api/tenants/acme', { budget: null }],
      ['POST', '/admin/api/dashboard-tokens', { tenant: 'globex' }],
    ];
    for (const [method, path, body] of attempts) {
      const response = await test.request(path, {
        method,
        cookie: tenantCookie,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status, `${method} ${path}`).toBe(401);
    }
    expect(test.store.getKey('acme-chat')).toEqual(before);
    expect(test.store.listKeys({}).map((k) => k.name)).not.toContain('sneaky');
  });

  it('nothing else of the admin API is there', async () => {
    for (const path of ['/admin/api/dashboard-tokens', '/admin/api/reconciliation', '/admin/api/anything']) expect((await get(path)).status).toBe(404);
  });
});

describe('the token', () => {
  it('is stored hashed and shown only once', async () => {
    const issued = await tokens.create({ tenant: 'acme' }, NOW);
    const row = test.db.database.sqlite.prepare('SELECT * FROM dashboard_tokens WHERE id = ?').get(issued.view.id);
    expect(JSON.stringify(row)).not.toContain(issued.token);
    expect(JSON.stringify(issued.view)).not.toContain(issued.token);
    expect(issued.view.prefix).toBe(issued.token.slice(0, 10));
  });

  it("its cookie does not open the operator's sessions, and the operator still sees everything", async () => {
    const admin = await text('/dashboard', adminCookie);
    expect(admin.body).toContain('globex-secret-project');
    expect(admin.body).toContain('Ledger vs the provider');
    // The admin API without the gate's help: a tenant cookie is not an admin session.
    const keysWithBearerlessTenant = await get('/admin/api/keys');
    expect(JSON.stringify(await keysWithBearerlessTenant.json())).not.toContain('globex');
  });

  it('revoked: its session ends at the next request', async () => {
    const issued = await tokens.create({ tenant: 'acme' }, NOW);
    const cookie = await test.login(issued.token);
    expect((await get('/dashboard', cookie)).status).toBe(200);
    await tokens.revoke(issued.view.prefix, NOW);
    const page = await get('/dashboard', cookie);
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toContain('/dashboard/login');
    expect((await get('/admin/api/dashboard/overview', cookie)).status).toBe(401);
    const again = await test.request('/dashboard/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: issued.token, next: '/dashboard' }).toString(),
    });
    expect(again.status).toBe(401);
  });

  it('expired: no login, and a session ends when the token does', async () => {
    const issued = await tokens.create({ tenant: 'acme', expiresAt: NOW + 60_000 }, NOW);
    const cookie = await test.login(issued.token);
    expect((await get('/dashboard', cookie)).status).toBe(200);
    test.clock.now = NOW + 60_001;
    try {
      expect((await get('/dashboard', cookie)).status).toBe(303);
      await expect(test.login(issued.token)).rejects.toThrow('login failed: 401');
    } finally {
      test.clock.now = NOW;
    }
  });
});

describe("the operator's API for dashboard tokens", () => {
  const admin = (method: string, path: string, body?: unknown) =>
    test.request(path, {
      method,
      headers: { authorization: 'Bearer tenant-scope-admin-token-0123456789', 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('issues a token once, lists it without its secret, and revokes it', async () => {
    const created = await admin('POST', '/admin/api/dashboard-tokens', { tenant: 'globex', label: 'globex ops', expiresAt: NOW + 86_400_000 });
    expect(created.status).toBe(201);
    const issued = (await created.json()) as { token: string; id: string; tenant: string; status: string; expiresAt: number };
    expect(issued).toMatchObject({ tenant: 'globex', status: 'active', expiresAt: NOW + 86_400_000 });
    expect(issued.token).toMatch(/^tgd-/);
    const listed = await (await admin('GET', '/admin/api/dashboard-tokens?tenant=globex')).text();
    expect(listed).toContain(issued.id);
    expect(listed).not.toContain(issued.token);
    // The globex token sees globex, not acme.
    const cookie = await test.login(issued.token);
    const overview = (await (await get('/admin/api/dashboard/overview', cookie)).json()) as { totals: { today: { costMicros: number } } };
    expect(overview.totals.today.costMicros).toBe(40_000);
    const revoked = (await (await admin('POST', `/admin/api/dashboard-tokens/${issued.id}/revoke`)).json()) as { status: string };
    expect(revoked.status).toBe('revoked');
    expect((await get('/admin/api/dashboard/overview', cookie)).status).toBe(401);
  });

  it('refuses bad input with a clear error, and an unknown tenant with 404', async () => {
    const unknown = await admin('POST', '/admin/api/dashboard-tokens', { tenant: 'nobody' });
    expect(unknown.status).toBe(404);
    const past = await admin('POST', '/admin/api/dashboard-tokens', { tenant: 'acme', expiresAt: NOW - 1 });
    expect(past.status).toBe(400);
    const extra = await admin('POST', '/admin/api/dashboard-tokens', { tenant: 'acme', scope: 'admin' });
    expect(((await extra.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  it("an operator's dashboard session lists tokens but cannot issue one (writes need the bearer token)", async () => {
    expect((await get('/admin/api/dashboard-tokens', adminCookie)).status).toBe(200);
    const post = await test.request('/admin/api/dashboard-tokens', {
      method: 'POST',
      cookie: adminCookie,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'acme' }),
    });
    expect(post.status).toBe(401);
  });
});

describe('odd requests from a tenant session', () => {
  it('a broken path or an empty reference is a 404, not an error', async () => {
    for (const path of ['/admin/api/keys/%E0%A4%A', '/admin/api/dashboard/keys/%ZZ', '/admin/api/tenants/%', '/admin/api/keys/%20']) {
      const response = await get(path);
      expect(response.status, path).toBe(404);
    }
  });
});
