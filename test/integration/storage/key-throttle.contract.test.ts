/**
 * The runaway throttle in the key store (src/storage/keys.ts), over a SQLite
 * file and over PostgreSQL: throttling a key shows on it with its message,
 * resuming lifts it and notes when, and neither touches a revoked key or repeats itself; a session or
 * end user of a key is paused and released on its own, and resuming the key lifts them all.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { openKeyStore } from '../../../src/storage/index.js';
import { MAX_ACTIVE_PAUSES } from '../../../src/domain/owner-pauses.js';

describeBackends('key throttle', (fixture) => {
  const clock = Date.UTC(2026, 0, 10, 12);

  it('throttles a key once, shows it with its message, and resumes it', async () => {
    const store = openKeyStore(await fixture.fresh(), { now: () => clock });
    await store.createKey({ name: 'loop', policy: { limits: [] } });
    await store.createKey({ name: 'calm', policy: { limits: [] } });
    expect((await store.getKey('loop')).throttle).toBeUndefined();

    const throttled = await store.throttleKey('loop', clock + 1000, 'paused: running away');
    expect(throttled.throttle).toEqual({ at: clock + 1000, reason: 'paused: running away' });
    // A second throttle keeps the first one's time and message.
    expect((await store.throttleKey('loop', clock + 5000, 'again')).throttle).toEqual({ at: clock + 1000, reason: 'paused: running away' });
    expect((await store.getKey('loop')).throttle).toEqual({ at: clock + 1000, reason: 'paused: running away' });
    expect((await store.getKey('calm')).throttle).toBeUndefined();

    // Resumed at the store's time, which the runaway stop judges spend from.
    const resumed = await store.resumeKey('loop');
    expect(resumed.throttle).toBeUndefined();
    expect(resumed.resumedAt).toBe(clock);
    expect((await store.getKey('loop')).throttle).toBeUndefined();
    expect((await store.resumeKey('loop')).resumedAt).toBe(clock);
  });

  it('leaves a revoked key as it is, and names a missing one', async () => {
    const store = openKeyStore(await fixture.fresh(), { now: () => clock });
    await store.createKey({ name: 'gone', policy: { limits: [] } });
    await store.revokeKey('gone');
    expect((await store.throttleKey('gone', clock, 'paused')).throttle).toBeUndefined();
    await expect(store.resumeKey('nobody')).rejects.toMatchObject({ code: 'not_found' });
  });

  it("pauses one session or end user of a key on its own, releases it, and lifts them all with the key's resume", async () => {
    const store = openKeyStore(await fixture.fresh(), { now: () => clock });
    await store.createKey({ name: 'agent', policy: { limits: [] } });
    const loop = { level: 'session', name: 'loop' } as const;
    const mallory = { level: 'end_user', name: 'mallory' } as const;

    const paused = await store.pauseOwner('agent', loop, clock + 1000, 'session paused');
    expect(paused.pauses).toEqual([{ level: 'session', name: 'loop', at: clock + 1000, reason: 'session paused' }]);
    expect(paused.throttle).toBeUndefined();
    // Pausing again keeps the first pause; a same-named end user is another owner.
    await store.pauseOwner('agent', loop, clock + 2000, 'again');
    await store.pauseOwner('agent', { level: 'end_user', name: 'loop' }, clock + 3000, 'user paused');
    await store.pauseOwner('agent', mallory, clock + 4000, 'mallory paused');
    expect((await store.getKey('agent')).pauses).toEqual([
      { level: 'session', name: 'loop', at: clock + 1000, reason: 'session paused' },
      { level: 'end_user', name: 'loop', at: clock + 3000, reason: 'user paused' },
      { level: 'end_user', name: 'mallory', at: clock + 4000, reason: 'mallory paused' },
    ]);

    // Releasing one notes when (spend before then is not judged again); the others stay paused.
    const released = await store.releaseOwner('agent', mallory);
    expect(released.pauses).toContainEqual({ level: 'end_user', name: 'mallory', at: clock });
    expect(released.pauses?.filter((p) => p.reason !== undefined).map((p) => `${p.level}:${p.name}`)).toEqual(['session:loop', 'end_user:loop']);

    // The key's resume lifts every pause on it, and the key's own.
    await store.throttleKey('agent', clock + 5000, 'key paused');
    const resumed = await store.resumeKey('agent');
    expect(resumed.throttle).toBeUndefined();
    expect(resumed.pauses?.every((p) => p.reason === undefined && p.at === clock)).toBe(true);
    expect(resumed.pauses).toHaveLength(3);
  });

  it('pauses at most MAX_ACTIVE_PAUSES owners of one key, and none of a revoked key', async () => {
    const store = openKeyStore(await fixture.fresh(), { now: () => clock });
    await store.createKey({ name: 'busy', policy: { limits: [] } });
    for (let i = 0; i < MAX_ACTIVE_PAUSES; i += 1) await store.pauseOwner('busy', { level: 'session', name: `s${i}` }, clock, 'paused');
    const full = await store.pauseOwner('busy', { level: 'session', name: 'one-more' }, clock, 'paused');
    expect(full.pauses?.some((p) => p.name === 'one-more')).toBe(false);
    expect(full.pauses).toHaveLength(MAX_ACTIVE_PAUSES);

    await store.createKey({ name: 'gone', policy: { limits: [] } });
    await store.revokeKey('gone');
    expect((await store.pauseOwner('gone', { level: 'session', name: 's' }, clock, 'paused')).pauses).toBeUndefined();
  });
});
