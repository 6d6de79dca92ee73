/** The upstream pool's fair share (fair-slots.ts): caps, order, bounded waits. */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TollgateError } from '../../../src/domain/errors.js';
import { FairSlots, perOwnerMaxOf } from '../../../src/upstreams/fair-slots.js';

afterEach(() => {
  vi.useRealTimers();
});

/** Lets granted promises settle. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('FairSlots', () => {
  it('leaves a connection for another key however many slow streams one key starts', async () => {
    const slots = new FairSlots({ capacity: 4, perOwnerMax: perOwnerMaxOf(4, 0.75), maxWaitMs: 60_000 });
    const granted: string[] = [];
    for (let i = 0; i < 8; i += 1) void slots.acquire('a').then(() => granted.push('a'));
    await settle();
    expect(granted).toEqual(['a', 'a', 'a']);
    const b = await slots.acquire('b');
    expect(slots.inUse).toBe(4);
    b();
  });

  it('hands a freed slot to the waiting key that holds the fewest', async () => {
    const slots = new FairSlots({ capacity: 2, perOwnerMax: 2, maxWaitMs: 60_000 });
    const first = await slots.acquire('a');
    await slots.acquire('a');
    const order: string[] = [];
    void slots.acquire('a').then(() => order.push('a'));
    void slots.acquire('b').then(() => order.push('b'));
    first();
    await settle();
    expect(order).toEqual(['b']);
  });

  it('refuses with a 429 after the longest wait, and forgets the waiter', async () => {
    vi.useFakeTimers();
    const slots = new FairSlots({ capacity: 1, perOwnerMax: 1, maxWaitMs: 2000 });
    await slots.acquire('a');
    const waiting = slots.acquire('b');
    const refused = expect(waiting).rejects.toSatisfy((error: unknown) => error instanceof TollgateError && error.status === 429);
    vi.advanceTimersByTime(2000);
    await refused;
    expect(slots.queued).toBe(0);
  });

  it('forgets a waiter whose client left', async () => {
    const slots = new FairSlots({ capacity: 1, perOwnerMax: 1, maxWaitMs: 60_000 });
    await slots.acquire('a');
    const controller = new AbortController();
    const waiting = slots.acquire('b', controller.signal);
    controller.abort();
    await expect(waiting).rejects.toThrow(/aborted/);
    expect(slots.queued).toBe(0);
  });

  it('never exceeds its capacity or a key’s cap, and serves every request once slots free', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 30 }), async (capacity, owners) => {
        const perOwnerMax = perOwnerMaxOf(capacity, 0.75);
        const slots = new FairSlots({ capacity, perOwnerMax, maxWaitMs: 60_000 });
        const held = new Map<string, number>();
        let served = 0;
        const releases: Array<() => void> = [];
        for (const owner of owners) {
          void slots.acquire(owner).then((release) => {
            held.set(owner, (held.get(owner) ?? 0) + 1);
            expect(slots.inUse).toBeLessThanOrEqual(capacity);
            expect(held.get(owner)).toBeLessThanOrEqual(perOwnerMax);
            served += 1;
            releases.push(() => {
              held.set(owner, held.get(owner)! - 1);
              release();
            });
          });
        }
        await settle();
        while (releases.length > 0) {
          releases.shift()!();
          await settle();
        }
        expect(served).toBe(owners.length);
        expect(slots.inUse).toBe(0);
      }),
      { numRuns: 50 },
    );
  });

  it('gives one key at most the share, leaving one connection for the others', () => {
    expect(perOwnerMaxOf(1, 0.75)).toBe(1);
    expect(perOwnerMaxOf(2, 0.75)).toBe(1);
    expect(perOwnerMaxOf(4, 0.75)).toBe(3);
    expect(perOwnerMaxOf(4, 1)).toBe(3);
    expect(perOwnerMaxOf(128, 0.75)).toBe(96);
    expect(perOwnerMaxOf(10, 0)).toBe(1);
  });
});
