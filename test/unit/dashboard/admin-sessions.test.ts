/**
 * Named admins in the dashboard (docs/admins.md): their token buys a session
 * that resolves, on every request, to the admin as an Actor with its role —
 * what the dashboard's writes act as (sessionActor) — and stops working once
 * the admin is revoked. The session cookie opens the admin API's reads only,
 * within the role.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { ADMIN_TOKEN, buildDashboardApp, type DashboardTestApp } from '../../support/dashboard.js';
import { openAdmins } from '../../../src/storage/index.js';
import { cliActor } from '../../../src/domain/admins.js';
import { resolveSessionActor } from '../../../src/dashboard/index.js';
import type { AdminStore } from '../../../src/storage/admins.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let open: DashboardTestApp[] = [];
afterEach(() => {
  for (const built of open) built.close();
  open = [];
});

function setUp(): { test: DashboardTestApp; admins: AdminStore } {
  const test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  open.push(test);
  return { test, admins: openAdmins({ kind: 'sqlite', database: test.db.database }) };
}

/** Who a request's session is, as the dashboard's write routes ask (session.ts). */
function whoAmI(admins: AdminStore) {
  const probe = new Hono();
  probe.get('/who', async (c) => c.json((await resolveSessionActor(c, ADMIN_TOKEN, admins, NOW)) ?? null));
  return async (cookie: string) => (await probe.request('/who', { headers: { cookie } })).json();
}

describe('a named admin in the dashboard', () => {
  it('logs in with its token, and its session is the admin with its role', async () => {
    const { test, admins } = setUp();
    const alice = await admins.create({ name: 'alice', role: 'operator' }, NOW, cliActor('root'));
    const cookie = await test.login(alice.token);
    expect(cookie).toMatch(/^tollgate_session=a1\./);
    expect(cookie).not.toContain(alice.token);
    expect((await test.request('/dashboard', { cookie })).status).toBe(200);
    expect(await whoAmI(admins)(cookie)).toEqual({ kind: 'admin', id: alice.view.id, name: 'alice', role: 'operator' });
    const bootstrap = await test.login(ADMIN_TOKEN);
    expect(await whoAmI(admins)(bootstrap)).toEqual({ kind: 'bootstrap' });
  });

  it("opens the admin API's reads within the role, never its writes", async () => {
    const { test, admins } = setUp();
    const viewer = await admins.create({ name: 'val', role: 'viewer' }, NOW, cliActor('root'));
    const cookie = await test.login(viewer.token);
    expect((await test.request('/admin/api/keys', { cookie })).status).toBe(200);
    expect((await test.request('/admin/api/dashboard/overview', { cookie })).status).toBe(200);
    expect((await test.request('/admin/api/admins', { cookie })).status).toBe(403);
    const write = await test.request('/admin/api/keys', {
      cookie,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', policy: { limits: [] } }),
    });
    expect(write.status).toBe(401);
    const bootstrap = await test.login(ADMIN_TOKEN);
    expect((await test.request('/admin/api/admins', { cookie: bootstrap })).status).toBe(200);
  });

  it('ends the session at the next request once the admin is revoked, and refuses its token at login', async () => {
    const { test, admins } = setUp();
    const bob = await admins.create({ name: 'bob', role: 'admin' }, NOW, cliActor('root'));
    const cookie = await test.login(bob.token);
    await admins.revoke('bob', NOW, cliActor('root'));
    const page = await test.request('/dashboard', { cookie });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toContain('/dashboard/login');
    expect((await test.request('/admin/api/dashboard/overview', { cookie })).status).toBe(401);
    expect(await whoAmI(admins)(cookie)).toBeNull();
    await expect(test.login(bob.token)).rejects.toThrow('login failed: 401');
    const refused = await test.request('/dashboard/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: bob.token }).toString(),
    });
    expect(await refused.text()).toContain('That admin token is unknown or revoked');
  });
});
