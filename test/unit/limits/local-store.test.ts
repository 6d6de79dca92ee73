import { describe, expect, it } from 'vitest';
import type { BucketRef } from '../../../src/limits/limiter.js';
import { createLocalLimiter } from '../../../src/limits/local-store.js';
import { createBucketRef } from '../../../src/limits/index.js';
import { parseLimit } from '../../../src/domain/policy.js';

/** A virtual monotonic clock. */
function createClock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const ref = (id: string, burst: number, ratePerSec: number, over: Partial<BucketRef> = {}): BucketRef => ({
  id,
  hashTag: id,
  limitName: id,
  ratePerSec,
  burst,
  ...over,
});

describe('local store', () => {
  it('takes from the key, tenant and global levels together or not at all', () => {
    const clock = createClock();
    const limiter = createLocalLimiter({ now: clock.now });
    const key = createBucketRef('key', 'k1', parseLimit('requests:10/min'));
    const tenant = createBucketRef('tenant', 't1', parseLimit('requests:3/min'));
    const global = createBucketRef('global', '', parseLimit('requests:1000/min'));
    const demands = [key, tenant, global].map((bucket) => ({ bucket, cost: 1 }));
    for (let i = 0; i < 3; i++) expect(limiter.acquireNow(demands).ok).toBe(true);
    const refused = limiter.acquireNow(demands);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.refusedBy).toBe(tenant);
    // Neither the key nor the global level paid for the refused request.
    const states = refused.states.map((s) => s.remaining);
    expect(states).toEqual([7, 0, 997]);
  });

  it('refuses with the longest wait among the refusing buckets', () => {
    const limiter = createLocalLimiter({ now: () => 0 });
    const slow = ref('slow', 1, 1 / 60);
    const fast = ref('fast', 1, 1);
    limiter.acquireNow([
      { bucket: slow, cost: 1 },
      { bucket: fast, cost: 1 },
    ]);
    const refused = limiter.acquireNow([
      { bucket: slow, cost: 1 },
      { bucket: fast, cost: 1 },
    ]);
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.refusedBy).toBe(slow);
      expect(refused.retryAfterMs).toBe(60_000);
    }
  });

  it('evicts idle full buckets and recreates them exactly', () => {
    const clock = createClock();
    const limiter = createLocalLimiter({ now: clock.now, idleMs: 1000 });
    const b = ref('b', 10, 10);
    expect(limiter.acquireNow([{ bucket: b, cost: 10 }]).ok).toBe(true);
    clock.advance(1500);
    limiter.acquireNow([{ bucket: ref('other', 1, 1), cost: 0 }]);
    expect(limiter.size).toBe(1);
    expect(limiter.acquireNow([{ bucket: b, cost: 10 }]).ok).toBe(true);
    expect(limiter.acquireNow([{ bucket: b, cost: 1 }]).ok).toBe(false);
  });

  it('keeps an idle bucket that is not yet full, and one in debt', () => {
    const clock = createClock();
    const limiter = createLocalLimiter({ now: clock.now, idleMs: 1000 });
    const slow = ref('slow', 10, 1 / 60);
    const indebted = ref('debt', 10, 10);
    expect(limiter.acquireNow([{ bucket: slow, cost: 10 }]).ok).toBe(true);
    const ticket = limiter.acquireNow([{ bucket: indebted, cost: 10 }]);
    if (!ticket.ok) throw new Error('expected admission');
    limiter.settle(ticket.ticket, [50]);
    clock.advance(2500);
    limiter.acquireNow([{ bucket: ref('other', 1, 1), cost: 0 }]);
    expect(limiter.size).toBe(3);
    // Still in debt: 50 taken from 10, refilled 25 → −15.
    const refused = limiter.acquireNow([{ bucket: indebted, cost: 1 }]);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.retryAfterMs).toBe(1600);
  });

  it('brings an evicted start-empty bucket back full, not empty', () => {
    const clock = createClock();
    const limiter = createLocalLimiter({ now: clock.now, idleMs: 1000 });
    const b = ref('b', 5, 5, { startEmpty: true });
    expect(limiter.acquireNow([{ bucket: b, cost: 1 }]).ok).toBe(false);
    clock.advance(5000);
    limiter.acquireNow([{ bucket: ref('other', 1, 1), cost: 0 }]);
    expect(limiter.size).toBe(1);
    expect(limiter.acquireNow([{ bucket: b, cost: 5 }]).ok).toBe(true);
  });

  it('charges debt settled after the bucket was evicted', () => {
    const clock = createClock();
    const b = ref('b', 10, 10);
    const limiter = createLocalLimiter({ now: clock.now, idleMs: 1000 });
    const admitted = limiter.acquireNow([{ bucket: b, cost: 5 }]);
    if (!admitted.ok) throw new Error('expected admission');
    clock.advance(10_000);
    limiter.acquireNow([{ bucket: ref('other', 1, 1), cost: 0 }]);
    expect(limiter.size).toBe(1);
    // A long stream ends and cost far more than reserved.
    limiter.settle(admitted.ticket, [25]);
    expect(limiter.acquireNow([{ bucket: b, cost: 1 }]).ok).toBe(false);
  });

  it('applies a changed rate or burst to an existing bucket', () => {
    const limiter = createLocalLimiter({ now: () => 0 });
    expect(limiter.acquireNow([{ bucket: ref('b', 10, 1), cost: 8 }]).ok).toBe(true);
    // Burst lowered to 5: the 2 left stay; raised later, it refills to the new burst.
    expect(limiter.acquireNow([{ bucket: ref('b', 5, 1), cost: 3 }]).ok).toBe(false);
    expect(limiter.acquireNow([{ bucket: ref('b', 5, 1), cost: 2 }]).ok).toBe(true);
  });
});
