/**
 * The audit trail's contract (src/storage/audit.ts, src/domain/audit.ts), over
 * a SQLite file and PostgreSQL: every write of the key store, the admin store
 * and the tenant token store appends exactly one row, in its own transaction,
 * naming the actor and the state before and after — and a write that changes
 * nothing, or fails, appends none. Rows read back newest first, filtered and
 * paged alike, and never hold a secret.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { openAdmins, openAuditReads, openDashboardTokens, openKeyStore } from '../../../src/storage/index.js';
import { hashKey } from '../../../src/storage/key-format.js';
import { parseLimit } from '../../../src/domain/policy.js';
import { cliActor, type Actor } from '../../../src/domain/admins.js';
import type { AuditEntry } from '../../../src/domain/audit.js';
import type { Backend } from '../../../src/storage/backend.js';

const rpm = (n: number) => parseLimit(`requests:${n}/min`);
const ALICE: Actor = { kind: 'admin', id: 'adm_alice0000000', name: 'alice', role: 'operator' };
const CLI = cliActor('ops');

describeBackends('audit trail', (fixture) => {
  const clock = { now: Date.UTC(2026, 10, 20, 12) };
  const open = async () => {
    const backend = await fixture.fresh();
    const audit = openAuditReads(backend);
    return {
      backend,
      keys: openKeyStore(backend, { now: () => clock.now }),
      admins: openAdmins(backend),
      tokens: openDashboardTokens(backend),
      audit,
      /** Every row, oldest first. */
      rows: async (): Promise<AuditEntry[]> => (await audit.page({ limit: 1000 })).data.reverse(),
    };
  };

  it('records every key write once, with its actor and the states before and after', async () => {
    const s = await open();
    await s.keys.createTenant('acme', {}, CLI);
    const issued = await s.keys.createKey({ name: 'search', tenant: 'acme', policy: { limits: [rpm(60)] } }, ALICE);
    clock.now += 1000;
    await s.keys.updateKey('search', { budget: { microUsd: 50_000_000, period: 'month' } }, ALICE);
    const rotated = await s.keys.rotateKey('search', CLI);
    await s.keys.throttleKey('search', clock.now, 'spending fast', { kind: 'system', name: 'runaway-stop' });
    await s.keys.resumeKey('search', ALICE);
    await s.keys.revokeKey('search', ALICE);
    const rows = await s.rows();
    expect(rows.map((r) => [r.action, r.actor.name])).toEqual([
      ['tenant.create', 'cli:ops'],
      ['key.create', 'alice'],
      ['key.update', 'alice'],
      ['key.rotate', 'cli:ops'],
      ['key.throttle', 'runaway-stop'],
      ['key.resume', 'alice'],
      ['key.revoke', 'alice'],
    ]);
    const [, created, updated, rotation, , , revoked] = rows;
    expect(created).toMatchObject({
      actor: { kind: 'admin', name: 'alice' },
      target: { kind: 'key', id: issued.view.id, name: 'search' },
      before: null,
      after: { name: 'search', tenant: 'acme', status: 'active', policy: { limits: [rpm(60)] } },
    });
    expect(updated!.before).toMatchObject({ policy: { limits: [rpm(60)] } });
    expect(updated!.before).not.toHaveProperty('policy.budget');
    expect(updated!.after).toMatchObject({ policy: { limits: [rpm(60)], budget: { microUsd: 50_000_000, period: 'month' } } });
    expect(updated!.at).toBe(clock.now);
    expect(rotation!.before).toMatchObject({ prefix: issued.view.prefix });
    expect(rotation!.after).toMatchObject({ prefix: rotated.view.prefix });
    expect(revoked).toMatchObject({ before: { status: 'active' }, after: { status: 'revoked' } });
    // No secret, and no hash of one, in any row.
    const text = JSON.stringify(rows);
    for (const secret of [issued.key, rotated.key, hashKey(issued.key), hashKey(rotated.key)]) expect(text).not.toContain(secret);
  });

  it('appends nothing for a write that changes nothing or fails', async () => {
    const s = await open();
    await s.keys.createKey({ name: 'one', policy: { limits: [] } }, ALICE);
    await s.keys.revokeKey('one', ALICE);
    await s.keys.revokeKey('one', ALICE);
    await s.keys.resumeKey('one', ALICE);
    await s.keys.createKey({ name: 'two', policy: { limits: [] } }, ALICE);
    await expect(s.keys.createKey({ name: 'two', policy: { limits: [] } }, ALICE)).rejects.toMatchObject({ code: 'conflict' });
    await expect(s.keys.updateKey('two', { name: 'two' }, ALICE)).resolves.toMatchObject({ name: 'two' });
    await expect(s.keys.updateKey('one', { models: ['gpt-4o'] }, ALICE)).rejects.toMatchObject({ code: 'invalid_request' });
    expect((await s.rows()).map((r) => r.action)).toEqual(['key.create', 'key.revoke', 'key.create', 'key.update']);
  });

  it('records a tenant created by a key that names it, and a tenant update with its policies', async () => {
    const s = await open();
    await s.keys.createKey({ name: 'k', tenant: 'globex', policy: { limits: [] } }, ALICE);
    const tenant = await s.keys.updateTenant('globex', { limits: [rpm(600)] }, CLI);
    const rows = await s.rows();
    expect(rows.map((r) => `${r.action} ${r.target.kind}:${r.target.name} by ${r.actor.name}`)).toEqual([
      'tenant.create tenant:globex by alice',
      'key.create key:k by alice',
      'tenant.update tenant:globex by cli:ops',
    ]);
    expect(rows[2]).toMatchObject({ target: { id: tenant.id }, before: { policy: { limits: [] } }, after: { policy: { limits: [rpm(600)] } } });
  });

  it('records admins and tenant tokens issued and revoked, never their secrets', async () => {
    const s = await open();
    await s.keys.createTenant('acme', {}, CLI);
    const admin = await s.admins.create({ name: 'bob', role: 'viewer' }, clock.now, CLI);
    await s.admins.revoke('bob', clock.now + 5, ALICE);
    await s.admins.revoke('bob', clock.now + 6, ALICE);
    const token = await s.tokens.create({ tenant: 'acme', label: 'finance' }, clock.now, ALICE);
    await s.tokens.revoke(token.view.id, clock.now + 7, CLI);
    await s.tokens.revoke(token.view.id, clock.now + 8, CLI);
    const rows = (await s.rows()).slice(1);
    expect(rows.map((r) => [r.action, r.actor.name, r.target.kind])).toEqual([
      ['admin.create', 'cli:ops', 'admin'],
      ['admin.revoke', 'alice', 'admin'],
      ['tenant-token.create', 'alice', 'tenant-token'],
      ['tenant-token.revoke', 'cli:ops', 'tenant-token'],
    ]);
    expect(rows[0]).toMatchObject({ target: { id: admin.view.id, name: 'bob' }, before: null, after: { name: 'bob', role: 'viewer', status: 'active' } });
    expect(rows[1]).toMatchObject({ before: { status: 'active' }, after: { status: 'revoked' }, at: clock.now + 5 });
    expect(rows[3]).toMatchObject({ before: { status: 'active', label: 'finance', tenant: 'acme' }, after: { status: 'revoked' } });
    const text = JSON.stringify(rows);
    for (const secret of [admin.token, token.token, hashKey(admin.token), hashKey(token.token)]) expect(text).not.toContain(secret);
  });

  it('reads newest first, filtered by target, actor, action and time, in pages', async () => {
    const s = await open();
    const start = clock.now;
    for (let i = 0; i < 5; i += 1) {
      clock.now = start + i * 60_000;
      await s.keys.createKey({ name: `k${i}`, policy: { limits: [] } }, i % 2 === 0 ? ALICE : CLI);
    }
    const k3 = await s.keys.getKey('k3');
    clock.now = start + 10 * 60_000;
    await s.keys.updateKey('k3', { models: ['gpt-4o'] }, ALICE);
    const first = await s.audit.page({ limit: 4 });
    expect(first.data.map((r) => r.target.name)).toEqual(['k3', 'k4', 'k3', 'k2']);
    expect(first.hasMore).toBe(true);
    const second = await s.audit.page({ limit: 4, cursor: first.nextCursor! });
    expect(second.data.map((r) => r.target.name)).toEqual(['k1', 'k0']);
    expect(second).toMatchObject({ hasMore: false, nextCursor: null });
    expect((await s.audit.page({ limit: 10, targetKind: 'key', targetId: k3.id })).data.map((r) => r.action)).toEqual(['key.update', 'key.create']);
    expect((await s.audit.page({ limit: 10, actor: 'cli:ops' })).data.map((r) => r.target.name)).toEqual(['k3', 'k1']);
    expect((await s.audit.page({ limit: 10, action: 'key.update' })).data).toHaveLength(1);
    const window = await s.audit.page({ limit: 10, since: start + 60_000, until: start + 3 * 60_000 });
    expect(window.data.map((r) => r.target.name)).toEqual(['k2', 'k1']);
    await expect(s.audit.page({ limit: 10, cursor: 'nope' })).rejects.toMatchObject({ code: 'invalid_value', param: 'cursor' });
  });

  it('offers no way to change or remove a row', async () => {
    const s = await open();
    expect(Object.keys(s.audit)).toEqual(['page']);
    await s.keys.createKey({ name: 'k', policy: { limits: [] } }, ALICE);
    expect(await rawCount(s.backend)).toBe(1);
  });
});

async function rawCount(backend: Backend): Promise<number> {
  if (backend.kind === 'sqlite') return (backend.database.sqlite.prepare('SELECT count(*) AS n FROM audit_log').get() as { n: number }).n;
  return Number((await backend.pool.query<{ n: string }>('SELECT count(*) AS n FROM audit_log')).rows[0]!.n);
}
