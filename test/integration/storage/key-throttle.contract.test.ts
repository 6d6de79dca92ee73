/**
 * The runaway throttle in the key store (src/storage/keys.ts), over a SQLite
 * file and over PostgreSQL: throttling a key shows on it with its message,
 * resuming lifts it and notes when, and neither touches a revoked key or repeats itself.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { openKeyStore } from '../../../src/storage/index.js';

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
});
