/**
 * Roles in the dashboard, and the audit trail of its writes, in-process:
 * a named operator's every write leaves exactly one audit row under its
 * name with the state before and after; a viewer sees no write button and
 * every write route refuses it; the audit page shows the trail with its
 * filters and links the exports.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildDashboardApp, ADMIN_TOKEN, type DashboardTestApp } from '../../support/dashboard.js';
import { sqliteAdmins } from '../../../src/storage/sqlite/admins.js';
import { sqliteAuditReads } from '../../../src/storage/sqlite/audit.js';
import { SYSTEM_ACTOR, type AdminRole } from '../../../src/domain/admins.js';
import type { AuditEntry } from '../../../src/domain/audit.js';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const ORIGIN = 'http://localhost';

let t: DashboardTestApp;

beforeEach(() => {
  t = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
});
afterEach(() => t.close());

async function loginAs(name: string, role: AdminRole): Promise<string> {
  const { token } = await sqliteAdmins(t.db.database).create({ name, role }, NOW, SYSTEM_ACTOR);
  return t.login(token);
}

async function csrfOf(path: string, cookie: string): Promise<string> {
  const html = await (await t.request(path, { cookie })).text();
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (match === null) throw new Error(`no CSRF field on ${path}`);
  return match[1]!;
}

function post(path: string, cookie: string, fields: Record<string, string>) {
  return t.request(path, {
    method: 'POST',
    cookie,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}

/** Every audit row, oldest first. */
async function trail(): Promise<AuditEntry[]> {
  return (await sqliteAuditReads(t.db.database).page({ limit: 1000 })).data.reverse();
}

describe('a named operator', () => {
  it('leaves exactly one audit row under its name for each dashboard write, with the state before and after', async () => {
    const cookie = await loginAs('alice', 'operator');
    const csrf = await csrfOf('/dashboard/new-key', cookie);
    const before = (await trail()).length;

    expect((await post('/dashboard/new-key', cookie, { _csrf: csrf, intent: 'save', name: 'audited', budgetUsd: '10' })).status).toBe(200);
    const id = t.store.getKey('audited').id;
    const edit = { _csrf: csrf, intent: 'save', name: 'audited', budgetUsd: '50', budgetPeriod: 'month' };
    expect((await post(`/dashboard/keys/${id}/edit`, cookie, edit)).status).toBe(303);
    // A preview writes nothing.
    expect((await post(`/dashboard/keys/${id}/edit`, cookie, { ...edit, intent: 'preview', budgetUsd: '70' })).status).toBe(200);
    expect((await post(`/dashboard/keys/${id}/rotate`, cookie, { _csrf: csrf })).status).toBe(200);
    expect((await post(`/dashboard/keys/${id}/revoke`, cookie, { _csrf: csrf })).status).toBe(303);
    expect((await post('/dashboard/new-tenant', cookie, { _csrf: csrf, intent: 'save', name: 'initech' })).status).toBe(303);
    const tenantId = t.store.getTenant('initech').id;
    expect((await post(`/dashboard/tenants/${tenantId}/edit`, cookie, { _csrf: csrf, intent: 'save', name: 'initech', budgetUsd: '5' })).status).toBe(303);

    const rows = (await trail()).slice(before);
    expect(rows.map((row) => [row.actor.name, row.action, row.target.name])).toEqual([
      ['alice', 'key.create', 'audited'],
      ['alice', 'key.update', 'audited'],
      ['alice', 'key.rotate', 'audited'],
      ['alice', 'key.revoke', 'audited'],
      ['alice', 'tenant.create', 'initech'],
      ['alice', 'tenant.update', 'initech'],
    ]);
    const update = rows[1]!;
    expect((update.before!.policy as { budget: unknown }).budget).toEqual({ microUsd: 10_000_000, period: 'month' });
    expect((update.after!.policy as { budget: unknown }).budget).toEqual({ microUsd: 50_000_000, period: 'month' });
    const audit = await (await t.request(`/dashboard/audit?key=${id}&action=key.update`, { cookie })).text();
    expect(audit).toContain('budget: $10.00 per month → $50.00 per month');
    // No secret in any row.
    expect(JSON.stringify(rows)).not.toMatch(/tg-[A-Za-z0-9]{20,}/);
  });
});

describe('a paused key', () => {
  it('shows Resume while the runaway stop pauses it, and resumes it under the operator name', async () => {
    t.issueKey('runaway', { limits: [] });
    const id = t.store.getKey('runaway').id;
    await t.store.async().throttleKey(id, NOW, 'spend rate over 20x its usual rate');
    const cookie = await loginAs('rita', 'operator');
    const html = await (await t.request(`/dashboard/keys/${id}`, { cookie })).text();
    expect(html).toContain(`action="/dashboard/keys/${id}/resume"`);
    const csrf = await csrfOf(`/dashboard/keys/${id}`, cookie);
    const resumed = await post(`/dashboard/keys/${id}/resume`, cookie, { _csrf: csrf });
    expect(resumed.status).toBe(303);
    expect(resumed.headers.get('location')).toBe(`/dashboard/keys/${id}?done=resumed`);
    expect(t.store.getKey(id).throttle).toBeUndefined();
    const after = await (await t.request(resumed.headers.get('location')!, { cookie })).text();
    expect(after).toContain('Resumed. Its requests pass again within a second.');
    expect(after).not.toContain(`/dashboard/keys/${id}/resume"`);
    const rows = (await trail()).filter((row) => row.action === 'key.resume');
    expect(rows.map((row) => [row.actor.name, row.target.name])).toEqual([['rita', 'runaway']]);
  });
});

describe('a suspended key', () => {
  it('is suspended and unsuspended from its page by an operator, one audit row each, and listed as suspended', async () => {
    t.issueKey('leaky', { limits: [] });
    const id = t.store.getKey('leaky').id;
    const cookie = await loginAs('sam', 'operator');
    const page = await (await t.request(`/dashboard/keys/${id}`, { cookie })).text();
    expect(page).toContain(`action="/dashboard/keys/${id}/suspend"`);
    expect(page).not.toContain(`/dashboard/keys/${id}/unsuspend"`);
    const csrf = await csrfOf(`/dashboard/keys/${id}`, cookie);

    const suspended = await post(`/dashboard/keys/${id}/suspend`, cookie, { _csrf: csrf });
    expect(suspended.status).toBe(303);
    expect(suspended.headers.get('location')).toBe(`/dashboard/keys/${id}?done=suspended`);
    expect(t.store.getKey(id)).toMatchObject({ status: 'suspended', suspended: { by: 'sam' } });
    const after = await (await t.request(suspended.headers.get('location')!, { cookie })).text();
    expect(after).toContain('Suspended. Its requests are refused within a second, until you unsuspend it.');
    expect(after).toContain(`action="/dashboard/keys/${id}/unsuspend"`);
    expect(after).not.toContain(`/dashboard/keys/${id}/suspend"`);
    expect(after).toMatch(/data-state="suspended"[^>]*>\s*suspended/);
    const list = await (await t.request('/dashboard/keys?status=suspended', { cookie })).text();
    expect(list).toContain('leaky');
    expect(list).toContain('data-state="suspended"');

    const lifted = await post(`/dashboard/keys/${id}/unsuspend`, cookie, { _csrf: csrf });
    expect(lifted.headers.get('location')).toBe(`/dashboard/keys/${id}?done=unsuspended`);
    expect(t.store.getKey(id).status).toBe('active');
    const rows = (await trail()).filter((row) => row.action === 'key.suspend' || row.action === 'key.unsuspend');
    expect(rows.map((row) => [row.actor.name, row.action, row.before?.status, row.after?.status])).toEqual([
      ['sam', 'key.suspend', 'active', 'suspended'],
      ['sam', 'key.unsuspend', 'suspended', 'active'],
    ]);
  });
});

describe('a viewer', () => {
  it('sees the pages and the audit trail but no write button, and every write route refuses it', async () => {
    t.issueKey('watched', { limits: [] });
    const id = t.store.getKey('watched').id;
    const operator = await loginAs('olga', 'operator');
    const csrf = await csrfOf(`/dashboard/keys/${id}`, operator);
    const viewer = await loginAs('victor', 'viewer');

    const keyPage = await t.request(`/dashboard/keys/${id}`, { cookie: viewer });
    expect(keyPage.status).toBe(200);
    const html = await keyPage.text();
    expect(html).not.toContain('_csrf');
    expect(html).not.toMatch(/Revoke|Rotate secret|Edit limits|Suspend/);
    const keys = await (await t.request('/dashboard/keys', { cookie: viewer })).text();
    expect(keys).not.toContain('New key');
    expect(keys).toContain('Audit trail');
    const tenants = await t.request('/dashboard/tenants', { cookie: viewer });
    expect(tenants.status).toBe(200);
    expect(await tenants.text()).not.toContain('New tenant');
    expect((await t.request('/dashboard/audit', { cookie: viewer })).status).toBe(200);

    for (const path of ['/dashboard/new-key', `/dashboard/keys/${id}/edit`, '/dashboard/new-tenant']) {
      expect((await t.request(path, { cookie: viewer })).status, path).toBe(403);
    }
    // Even with a valid token of another session, from this site.
    for (const path of [
      `/dashboard/keys/${id}/revoke`,
      `/dashboard/keys/${id}/rotate`,
      `/dashboard/keys/${id}/suspend`,
      `/dashboard/keys/${id}/unsuspend`,
      `/dashboard/keys/${id}/edit`,
      '/dashboard/new-key',
      '/dashboard/new-tenant',
    ]) {
      const response = await post(path, viewer, { _csrf: csrf, intent: 'save', name: 'nope', budgetUsd: '1' });
      expect(response.status, path).toBe(403);
      expect(await response.text()).toContain('Your session can only read');
    }
    expect(t.store.getKey(id).status).toBe('active');
    expect((await trail()).filter((row) => row.actor.name === 'victor')).toEqual([]);
  });
});

describe('the audit page', () => {
  it('shows the trail filtered by key, actor, action and time, and links the exports with the same filters', async () => {
    const alice = await loginAs('alice', 'operator');
    const csrf = await csrfOf('/dashboard/new-key', alice);
    await post('/dashboard/new-key', alice, { _csrf: csrf, intent: 'save', name: 'first' });
    await post('/dashboard/new-key', alice, { _csrf: csrf, intent: 'save', name: 'second' });
    const admin = await t.login(ADMIN_TOKEN);
    const adminCsrf = await csrfOf('/dashboard/new-key', admin);
    const secondId = t.store.getKey('second').id;
    await post(`/dashboard/keys/${secondId}/revoke`, admin, { _csrf: adminCsrf });

    const rowsOf = async (query: string) => {
      const html = await (await t.request(`/dashboard/audit${query}`, { cookie: alice })).text();
      return [...html.matchAll(/data-audit-row="([^"]+)"><td[^>]*>[^<]*<\/td><td data-actor="">([^<]+)</g)].map((m) => `${m[2]} ${m[1]}`);
    };
    // Newest first; alice herself was made by a store write without an actor (`tollgate`).
    expect(await rowsOf('')).toEqual(['bootstrap key.revoke', 'alice key.create', 'alice key.create', 'tollgate admin.create']);
    expect(await rowsOf('?key=second')).toEqual(['bootstrap key.revoke', 'alice key.create']);
    expect(await rowsOf('?actor=alice')).toEqual(['alice key.create', 'alice key.create']);
    expect(await rowsOf('?action=key.revoke')).toEqual(['bootstrap key.revoke']);
    expect(await rowsOf('?since=today')).toHaveLength(4);
    expect(await rowsOf('?since=2026-11-21')).toEqual([]);

    const page = await (await t.request('/dashboard/audit?key=second&actor=alice', { cookie: alice })).text();
    expect(page).toContain('href="/admin/api/audit?key=second&amp;actor=alice&amp;format=csv"');
    expect(page).toContain('href="/admin/api/audit?key=second&amp;actor=alice&amp;format=ndjson"');
    const csv = await t.request('/admin/api/audit?key=second&actor=alice&format=csv', { cookie: alice });
    expect(csv.status).toBe(200);
    const lines = (await csv.text()).trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('alice');

    const bad = await t.request('/dashboard/audit?since=someday', { cookie: alice });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('role="alert"');
  });
});
