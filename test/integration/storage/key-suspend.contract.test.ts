/**
 * An operator's suspension of a key (src/storage/keys.ts), over a SQLite file
 * and PostgreSQL: suspending shows on the key (status, since when, by whom)
 * and on what the proxy's key cache reads, unsuspending lifts it, each change
 * appends exactly one audit row, and a repeat or a revoked key changes nothing
 * and appends none. The runaway stop's resume never lifts a suspension.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { openAuditReads, openKeyStore } from '../../../src/storage/index.js';
import { cliActor, type Actor } from '../../../src/domain/admins.js';

const ALICE: Actor = { kind: 'admin', id: 'adm_alice0000000', name: 'alice', role: 'operator' };
const CLI = cliActor('ops');
const RUNAWAY_STOP: Actor = { kind: 'system', name: 'runaway-stop' };

describeBackends('key suspension', (fixture) => {
  const clock = { now: Date.UTC(2026, 10, 26, 9) };
  const open = async () => {
    const backend = await fixture.fresh();
    const audit = openAuditReads(backend);
    return {
      keys: openKeyStore(backend, { now: () => clock.now }),
      /** Every row, oldest first. */
      rows: async () => (await audit.page({ limit: 1000 })).data.reverse(),
    };
  };

  it('suspends a key once with who and when, lifts it, and audits each change once', async () => {
    const s = await open();
    await s.keys.createKey({ name: 'leaky', policy: { limits: [] } }, CLI);
    await s.keys.createKey({ name: 'calm', policy: { limits: [] } }, CLI);
    const suspendedAt = clock.now;

    const suspended = await s.keys.suspendKey('leaky', ALICE);
    expect(suspended.status).toBe('suspended');
    expect(suspended.suspended).toEqual({ at: suspendedAt, by: 'alice' });
    clock.now += 5000;
    // Again: the first suspension stands, and no row is added.
    expect((await s.keys.suspendKey('leaky', CLI)).suspended).toEqual({ at: suspendedAt, by: 'alice' });
    expect((await s.keys.getKey('leaky')).status).toBe('suspended');
    expect((await s.keys.listKeys()).map((k) => [k.name, k.status])).toEqual([
      ['calm', 'active'],
      ['leaky', 'suspended'],
    ]);
    // Not suspended: unsuspending changes nothing.
    expect((await s.keys.unsuspendKey('calm', CLI)).status).toBe('active');

    const lifted = await s.keys.unsuspendKey('leaky', CLI);
    expect(lifted.status).toBe('active');
    expect(lifted.suspended).toBeUndefined();
    expect((await s.keys.unsuspendKey('leaky', CLI)).status).toBe('active');

    const rows = (await s.rows()).filter((r) => r.action === 'key.suspend' || r.action === 'key.unsuspend');
    expect(rows.map((r) => [r.action, r.actor.name, r.target.name])).toEqual([
      ['key.suspend', 'alice', 'leaky'],
      ['key.unsuspend', 'cli:ops', 'leaky'],
    ]);
    expect(rows[0]).toMatchObject({ before: { status: 'active' }, after: { status: 'suspended', suspended: { at: suspendedAt, by: 'alice' } } });
    expect(rows[0]!.before).not.toHaveProperty('suspended');
    expect(rows[1]).toMatchObject({ before: { status: 'suspended', suspended: { at: suspendedAt, by: 'alice' } }, after: { status: 'active' } });
    expect(rows[1]!.after).not.toHaveProperty('suspended');
  });

  it('leaves a revoked key as it is, and names a missing one', async () => {
    const s = await open();
    await s.keys.createKey({ name: 'gone', policy: { limits: [] } });
    await s.keys.suspendKey('gone', ALICE);
    await s.keys.revokeKey('gone', ALICE);
    const before = (await s.rows()).length;
    expect((await s.keys.unsuspendKey('gone', ALICE)).status).toBe('revoked');
    await s.keys.createKey({ name: 'dead', policy: { limits: [] } });
    await s.keys.revokeKey('dead', ALICE);
    const afterCreate = (await s.rows()).length;
    expect((await s.keys.suspendKey('dead', ALICE)).suspended).toBeUndefined();
    expect((await s.rows()).length).toBe(afterCreate);
    expect(afterCreate).toBe(before + 2);
    await expect(s.keys.suspendKey('nobody', ALICE)).rejects.toMatchObject({ code: 'not_found' });
    await expect(s.keys.unsuspendKey('nobody', ALICE)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("keeps a suspension through the runaway stop's throttle and resume", async () => {
    const s = await open();
    await s.keys.createKey({ name: 'loop', policy: { limits: [] } });
    await s.keys.suspendKey('loop', ALICE);
    await s.keys.throttleKey('loop', clock.now, 'paused: running away', RUNAWAY_STOP);
    const resumed = await s.keys.resumeKey('loop', RUNAWAY_STOP);
    expect(resumed.throttle).toBeUndefined();
    expect(resumed.status).toBe('suspended');
    expect(resumed.suspended).toEqual({ at: clock.now, by: 'alice' });
    // Editing the key's policy keeps it suspended too.
    expect((await s.keys.updateKey('loop', { models: ['gpt-4o-mini'] }, ALICE)).status).toBe('suspended');
  });
});
