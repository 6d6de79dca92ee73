/**
 * The runaway stop's pauses below a key (src/domain/owner-pauses.ts): which request a pause
 * refuses, how the list changes, that it stays bounded whatever happens, and that a damaged
 * column reads as no pauses rather than an error on the request path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { OwnerPause, PauseOwner } from '../../../src/domain/keys.js';
import {
  activePauses,
  changeRunaway,
  MAX_ACTIVE_PAUSES,
  pausedFor,
  readPauses,
  runawayFields,
  withPause,
  withResume,
  writePauses,
} from '../../../src/domain/owner-pauses.js';

const loop: PauseOwner = { level: 'session', name: 'loop' };
const mallory: PauseOwner = { level: 'end_user', name: 'mallory' };

describe('pausedFor', () => {
  const pauses: OwnerPause[] = [
    { ...loop, at: 1, reason: 'session loop paused' },
    { ...mallory, at: 2, reason: 'mallory paused' },
    { level: 'session', name: 'done', at: 3 },
  ];
  it('refuses the paused session and the paused end user, and nobody else', () => {
    expect(pausedFor(pauses, 'loop', undefined)?.reason).toBe('session loop paused');
    expect(pausedFor(pauses, undefined, 'mallory')?.reason).toBe('mallory paused');
    expect(pausedFor(pauses, 'other', 'alice')).toBeUndefined();
    // A session named like a paused end user is another owner.
    expect(pausedFor(pauses, 'mallory', undefined)).toBeUndefined();
    // Released: passes.
    expect(pausedFor(pauses, 'done', undefined)).toBeUndefined();
    expect(pausedFor(undefined, 'loop', 'mallory')).toBeUndefined();
  });
});

describe('changes', () => {
  it('pauses once, releases with the time, and a key resume releases all and the key', () => {
    const once = withPause([], loop, 10, 'paused')!;
    expect(withPause(once, loop, 20, 'again')).toBeUndefined();
    const released = withResume(once, loop, 30)!;
    expect(released).toEqual([{ ...loop, at: 30 }]);
    expect(withResume(released, loop, 40)).toBeUndefined();
    expect(withPause(released, loop, 50, 'paused again')).toEqual([{ ...loop, at: 50, reason: 'paused again' }]);

    const columns = { throttledAt: null, throttleReason: null, pausedOwners: writePauses(withPause(once, mallory, 11, 'm')!) };
    const resumed = changeRunaway(columns, { kind: 'resume', at: 99 })!;
    expect(resumed.throttleReason).toBeNull();
    expect(resumed.throttledAt).toBeNull(); // the key itself was not paused
    expect(readPauses(resumed.pausedOwners)).toEqual([
      { ...loop, at: 99 },
      { ...mallory, at: 99 },
    ]);
    expect(changeRunaway(resumed, { kind: 'resume', at: 100 })).toBeUndefined();
    const keyPaused = changeRunaway(resumed, { kind: 'throttle', at: 101, reason: 'key' })!;
    expect(runawayFields(keyPaused.throttledAt, keyPaused.throttleReason, keyPaused.pausedOwners).throttle).toEqual({ at: 101, reason: 'key' });
    expect(changeRunaway(keyPaused, { kind: 'throttle', at: 102, reason: 'again' })).toBeUndefined();
    const lifted = changeRunaway(keyPaused, { kind: 'resume', at: 103 })!;
    expect(runawayFields(lifted.throttledAt, lifted.throttleReason, lifted.pausedOwners)).toMatchObject({ resumedAt: 103 });
  });

  it('reads a damaged column as no pauses, and drops entries it cannot read', () => {
    expect(readPauses('not json')).toEqual([]);
    expect(readPauses('{"level":"session"}')).toEqual([]);
    expect(readPauses(null)).toEqual([]);
    expect(readPauses(JSON.stringify([{ level: 'tenant', name: 'x', at: 1 }, { level: 'session', name: 'ok', at: 2, reason: 'r' }, 7]))).toEqual([
      { level: 'session', name: 'ok', at: 2, reason: 'r' },
    ]);
  });
});

describe('bounds', () => {
  const owner = fc.record({
    level: fc.constantFrom('session' as const, 'end_user' as const),
    name: fc.constantFrom(...Array.from({ length: 150 }, (_, i) => `o${i}`)),
  });
  const step = fc.oneof(
    fc.record({ kind: fc.constant('pause' as const), owner, at: fc.nat(1e9), reason: fc.constant('paused') }),
    fc.record({ kind: fc.constant('release' as const), owner, at: fc.nat(1e9) }),
    fc.record({ kind: fc.constant('resume' as const), at: fc.nat(1e9) }),
  );

  it('keeps at most MAX_ACTIVE_PAUSES paused and 100 entries, one per owner, through any changes, and reads back what it wrote', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 400 }), (steps) => {
        let columns = { throttledAt: null as number | null, throttleReason: null as string | null, pausedOwners: null as string | null };
        for (const change of steps) columns = changeRunaway(columns, change) ?? columns;
        const pauses = readPauses(columns.pausedOwners);
        expect(activePauses(pauses).length).toBeLessThanOrEqual(MAX_ACTIVE_PAUSES);
        expect(pauses.length).toBeLessThanOrEqual(100);
        expect(new Set(pauses.map((p) => `${p.level}:${p.name}`)).size).toBe(pauses.length);
        expect(readPauses(writePauses(pauses))).toEqual(pauses);
      }),
    );
  });

  it('a pause refused at the bound changes nothing', () => {
    let pauses: OwnerPause[] = [];
    for (let i = 0; i < MAX_ACTIVE_PAUSES; i += 1) pauses = withPause(pauses, { level: 'session', name: `s${i}` }, i, 'p')!;
    expect(withPause(pauses, loop, 1, 'p')).toBeUndefined();
    expect(withPause(withResume(pauses, { level: 'session', name: 's0' }, 5)!, loop, 6, 'p')).toHaveLength(MAX_ACTIVE_PAUSES + 1);
  });
});
