/**
 * The dashboard's writes over HTTP, in-process: forms post through the admin
 * operations and are refused when they come from another site, carry no or a
 * wrong CSRF token, or come from a session that may only read (a tenant's);
 * a bad value is shown in the form with the CLI's message; the preview says
 * what the change means and saves nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildDashboardApp, ADMIN_TOKEN, type DashboardTestApp } from '../../support/dashboard.js';
import { sqliteDashboardTokens } from '../../../src/storage/sqlite/tenant-tokens.js';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const ORIGIN = 'http://localhost';

let t: DashboardTestApp;
let cookie: string;

beforeEach(async () => {
  t = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  cookie = await t.login();
});
afterEach(() => t.close());

/** The CSRF token a page's forms carry. */
async function csrfOf(path: string, session = cookie): Promise<string> {
  const html = await (await t.request(path, { cookie: session })).text();
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (match === null) throw new Error(`no CSRF field on ${path}`);
  return match[1]!;
}

function post(path: string, fields: Record<string, string>, headers: Record<string, string> = { origin: ORIGIN }, session = cookie) {
  return t.request(path, {
    method: 'POST',
    cookie: session,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}

describe('creating a key in the dashboard', () => {
  it('shows the secret once and stores the key with the policy the form gave', async () => {
    const csrf = await csrfOf('/dashboard/new-key');
    const response = await post('/dashboard/new-key', {
      _csrf: csrf,
      intent: 'save',
      name: 'web-app',
      tenant: 'acme',
      limits: 'requests:60/min\ntokens:40000/min,burst=60000',
      budgetUsd: '50',
      budgetPeriod: 'month',
      models: 'gpt-4o-mini, gpt-4o',
      tagBudgets: 'search=5/day',
    });
    expect(response.status).toBe(200);
    const html = await response.text();
    const secret = /data-secret="">(tg-[^<]+)</.exec(html)?.[1];
    expect(secret).toMatch(/^tg-/);
    expect(html).toContain('This key may spend $50.00 per month; $0.00 spent this month.');
    const view = t.store.getKey('web-app');
    expect(view.tenant).toBe('acme');
    expect(view.policy.budget).toEqual({ microUsd: 50_000_000, period: 'month' });
    expect(view.policy.limits.map((l) => [l.unit, l.amount, l.burst])).toEqual([
      ['requests', 60, 60],
      ['tokens', 40000, 60000],
    ]);
    expect(view.policy.models).toEqual(['gpt-4o-mini', 'gpt-4o']);
    expect(view.policy.tagBudgets).toEqual([{ tag: 'search', microUsd: 5_000_000, period: 'day' }]);
    // The key page never shows it again.
    const page = await (await t.request(`/dashboard/keys/${view.id}`, { cookie })).text();
    expect(page).not.toContain(secret!);
  });

  it('shows a bad value in the form with the CLI message, keeping what was typed, and creates nothing', async () => {
    const csrf = await csrfOf('/dashboard/new-key');
    const response = await post('/dashboard/new-key', { _csrf: csrf, intent: 'save', name: 'bad', limits: 'requests:sixty/min', budgetUsd: '12.3456789' });
    expect(response.status).toBe(422);
    const html = await response.text();
    expect(html).toContain('data-form-error="">Limits: limit amount &quot;sixty&quot; is not a number</p>');
    expect(html).toContain('requests:sixty/min');
    expect(t.store.listKeys({}).map((k) => k.name)).not.toContain('bad');

    const budget = await post('/dashboard/new-key', { _csrf: csrf, intent: 'save', name: 'bad', budgetUsd: '12.3456789' });
    expect(budget.status).toBe(422);
    expect(await budget.text()).toContain('Budget: &quot;12.3456789&quot; has more precision than one micro-dollar (6 decimals)');
  });
});

describe('editing a key', () => {
  it('previews the change with its budget sentence and saves nothing, then saves it', async () => {
    t.issueKey('edited', { limits: [], budget: { microUsd: 10_000_000, period: 'month' } });
    const id = t.store.getKey('edited').id;
    const csrf = await csrfOf(`/dashboard/keys/${id}/edit`);
    const fields = { _csrf: csrf, name: 'edited', budgetUsd: '50', budgetPeriod: 'month', limits: 'requests:10/min' };
    const preview = await post(`/dashboard/keys/${id}/edit`, { ...fields, intent: 'preview' });
    expect(preview.status).toBe(200);
    const html = await preview.text();
    expect(html).toContain('This key may now spend $50.00 per month; $0.00 spent this month.');
    expect(html).toContain('$10.00 per month');
    expect(t.store.getKey(id).policy.budget?.microUsd).toBe(10_000_000);

    const saved = await post(`/dashboard/keys/${id}/edit`, { ...fields, intent: 'save' });
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/dashboard/keys/${id}?done=saved`);
    expect(t.store.getKey(id).policy.budget?.microUsd).toBe(50_000_000);
    const page = await (await t.request(saved.headers.get('location')!, { cookie })).text();
    expect(page).toContain('This key may now spend $50.00 per month; $0.00 spent this month.');
  });

  it('revokes and rotates a key from its page', async () => {
    t.issueKey('doomed');
    const id = t.store.getKey('doomed').id;
    const csrf = await csrfOf(`/dashboard/keys/${id}`);
    const rotated = await post(`/dashboard/keys/${id}/rotate`, { _csrf: csrf });
    expect(rotated.status).toBe(200);
    expect(await rotated.text()).toMatch(/data-secret="">tg-/);
    expect(t.store.getKey(id).rotatedAt).not.toBeNull();
    const revoked = await post(`/dashboard/keys/${id}/revoke`, { _csrf: csrf });
    expect(revoked.status).toBe(303);
    expect(t.store.getKey(id).status).toBe('revoked');
    const again = await post(`/dashboard/keys/${id}/rotate`, { _csrf: csrf });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('is revoked');
  });
});

describe('tenants', () => {
  it('are created and edited through their forms', async () => {
    const csrf = await csrfOf('/dashboard/new-tenant');
    const created = await post('/dashboard/new-tenant', { _csrf: csrf, intent: 'save', name: 'globex', budgetUsd: '200', budgetPeriod: 'month' });
    expect(created.status).toBe(303);
    const tenant = t.store.getTenant('globex');
    expect(tenant.policy.budget).toEqual({ microUsd: 200_000_000, period: 'month' });
    const edited = await post(`/dashboard/tenants/${tenant.id}/edit`, { _csrf: csrf, intent: 'save', name: 'globex', budgetUsd: '', limits: 'usd:5/day' });
    expect(edited.status).toBe(303);
    expect(t.store.getTenant('globex').policy.budget).toBeUndefined();
    expect(t.store.getTenant('globex').policy.limits.map((l) => l.unit)).toEqual(['usd']);
    const list = await (await t.request(edited.headers.get('location')!, { cookie })).text();
    expect(list).toContain('This tenant has no budget: its spend is not capped.');
  });
});

describe('cross-site protection', () => {
  it('refuses a post from another origin, with no origin, or without or with a wrong CSRF token', async () => {
    t.issueKey('target');
    const id = t.store.getKey('target').id;
    const csrf = await csrfOf(`/dashboard/keys/${id}`);
    const attempts: Array<[Record<string, string>, Record<string, string>]> = [
      [{ _csrf: csrf }, { origin: 'https://evil.example' }],
      [{ _csrf: csrf }, { origin: 'null' }],
      [{ _csrf: csrf }, {}],
      [{ _csrf: csrf }, { referer: 'https://evil.example/page' }],
      [{}, { origin: ORIGIN }],
      [{ _csrf: 'x'.repeat(43) }, { origin: ORIGIN }],
    ];
    for (const [fields, headers] of attempts) {
      const response = await post(`/dashboard/keys/${id}/revoke`, fields, headers);
      expect(response.status, JSON.stringify(headers)).toBe(403);
    }
    // Another session's token is not this one's.
    const other = await t.login();
    const otherCsrf = await csrfOf(`/dashboard/keys/${id}`, other);
    expect(otherCsrf).not.toBe(csrf);
    expect((await post(`/dashboard/keys/${id}/revoke`, { _csrf: otherCsrf })).status).toBe(403);
    expect(t.store.getKey(id).status).toBe('active');
    // The same post from the page itself (its Referer, or its Origin) goes through.
    expect((await post(`/dashboard/keys/${id}/revoke`, { _csrf: csrf }, { referer: `${ORIGIN}/dashboard/keys/${id}` })).status).toBe(303);
    expect(t.store.getKey(id).status).toBe('revoked');
  });

  it('keeps the session cookie SameSite=Strict and the pages under the strict CSP', async () => {
    const login = await t.request('/dashboard/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: ADMIN_TOKEN }).toString(),
    });
    expect(login.headers.get('set-cookie')).toMatch(/SameSite=Strict/);
    const page = await t.request('/dashboard/new-key', { cookie });
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).not.toMatch(/<script>|\sstyle=|\son[a-z]+=/);
  });
});

describe('a tenant session', () => {
  it('sees no write buttons and is refused every write route', async () => {
    t.issueKey('acme-key', { limits: [] }, { tenant: 'acme' });
    const id = t.store.getKey('acme-key').id;
    const { token } = await sqliteDashboardTokens(t.db.database).create({ tenant: 'acme', label: 'acme' }, NOW);
    const tenant = await t.login(token);
    const keyPage = await (await t.request(`/dashboard/keys/${id}`, { cookie: tenant })).text();
    expect(keyPage).not.toContain('_csrf');
    expect(keyPage).not.toContain('Revoke');
    expect(await (await t.request('/dashboard/keys', { cookie: tenant })).text()).not.toContain('New key');
    for (const path of ['/dashboard/new-key', `/dashboard/keys/${id}/edit`, '/dashboard/new-tenant']) {
      expect((await t.request(path, { cookie: tenant })).status, path).toBe(403);
    }
    expect((await t.request('/dashboard/tenants', { cookie: tenant })).status).toBe(404);
    const adminCsrf = await csrfOf(`/dashboard/keys/${id}`);
    for (const path of [`/dashboard/keys/${id}/revoke`, `/dashboard/keys/${id}/rotate`, '/dashboard/new-key']) {
      const response = await post(path, { _csrf: adminCsrf, name: 'x', intent: 'save' }, { origin: ORIGIN }, tenant);
      expect(response.status, path).toBe(403);
    }
    expect(t.store.getKey(id).status).toBe('active');
    expect(t.store.listKeys({}).map((k) => k.name)).not.toContain('x');
  });
});
