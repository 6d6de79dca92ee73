/**
 * Whatever a key, tenant or client put in the database is shown as text:
 * names and model strings (a client chooses its model string) are escaped in
 * the pages and only ever bound as text by the browser script.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import type { AppEnv } from '../../../src/app-env.js';
import { createDashboardRoutes, type KeyPageView } from '../../../src/dashboard/index.js';
import { CLIENT_SCRIPT } from '../../../src/dashboard/client-script.js';
import { ADMIN_TOKEN, buildDashboardApp, recordRequest, type DashboardTestApp } from '../../support/dashboard.js';
import { openDashboardReads } from '../../../src/storage/index.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
const EVIL_NAME = '<script>alert(1)</script>';
const EVIL_TENANT = '<b onmouseover="alert(2)">acme</b>';
const EVIL_MODEL = '"><img src=x onerror=alert(3)>';
let test: DashboardTestApp;
let cookie: string;
let keyId: string;

beforeAll(async () => {
  test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  const { view } = test.store.createKey({
    name: 'plain',
    tenant: 'acme',
    policy: { limits: [{ name: 'rpm', unit: 'requests', amount: 60, period: 'min', burst: 60 }], budget: { microUsd: 1_000_000, period: 'day' } },
  });
  keyId = view.id;
  // The CLI would refuse these names; another writer of the file might not.
  test.db.database.sqlite.prepare('UPDATE api_keys SET name = ? WHERE id = ?').run(EVIL_NAME, keyId);
  test.db.database.sqlite.prepare('UPDATE tenants SET name = ?, version = version + 1').run(EVIL_TENANT);
  test.db.database.sqlite.prepare('UPDATE api_keys SET version = version + 100 WHERE id = ?').run(keyId);
  await recordRequest(test.ledger, { keyId, createdAt: NOW - 60_000, model: EVIL_MODEL, costMicros: 123_456 });
  cookie = await test.login();
});

afterAll(() => {
  test.close();
});

describe('escaping', () => {
  it('renders hostile names and models as text on every page', async () => {
    for (const path of ['/dashboard', '/dashboard/keys', `/dashboard/keys/${keyId}`]) {
      const html = await (await test.request(path, { cookie })).text();
      expect(html, path).not.toContain(EVIL_NAME);
      expect(html, path).not.toContain('<b onmouseover');
      expect(html, path).not.toContain('<img src=x');
      expect(html, path).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      if (path !== '/dashboard') expect(html, path).toContain('&lt;b onmouseover=&quot;alert(2)&quot;&gt;acme&lt;/b&gt;');
      if (path.includes(keyId)) expect(html).toContain('&quot;&gt;&lt;img src=x onerror=alert(3)&gt;');
    }
  });

  it('hands them to the browser as JSON data, which the script binds as text only', async () => {
    const view = (await (await test.request(`/admin/api/dashboard/keys/${keyId}`, { cookie })).json()) as KeyPageView;
    expect(view.key.name).toBe(EVIL_NAME);
    expect(view.latest[0]!.model).toBe(EVIL_MODEL);
    expect(CLIENT_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
    expect(CLIENT_SCRIPT).toContain('textContent');
  });
});

describe('live limits on the key page', () => {
  it('says "not available" without the limiter, and shows what is left with it', async () => {
    const without = (await (await test.request(`/admin/api/dashboard/keys/${keyId}`, { cookie })).json()) as KeyPageView;
    expect(without.limits).toEqual([
      expect.objectContaining({ name: 'rpm', fraction: null, text: { spec: 'requests:60/min,name=rpm', live: 'not available' } }),
    ]);
    expect(await (await test.request(`/dashboard/keys/${keyId}`, { cookie })).text()).toContain('live utilisation not available');

    const withLimiter = new Hono<AppEnv>();
    withLimiter.route(
      '/dashboard',
      createDashboardRoutes({
        database: test.db.database,
        reads: openDashboardReads({ kind: 'sqlite', database: test.db.database }),
        adminToken: ADMIN_TOKEN,
        now: () => NOW,
        limitSnapshot: (id) =>
          id === keyId
            ? [
                { limitName: 'rpm', remaining: 15, burst: 60, unit: 'requests' },
                { limitName: 'tenant-usd', remaining: 2_500_000, burst: 10_000_000, unit: 'usd' },
              ]
            : [],
      }),
    );
    const html = await (await withLimiter.request(`/dashboard/keys/${keyId}`, { headers: { cookie } })).text();
    expect(html).toContain('live from the limiter');
    expect(html).toContain('15 of 60 requests left (25%)');
    expect(html).toContain('$2.50 of $10.00 left (25%)');
    expect(html).toMatch(/<meter[^>]*value="0.25"/);
  });
});
