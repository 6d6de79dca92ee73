/**
 * The primary of `serve --workers N` keeps buckets and budget counters as
 * Redis would: a bucket's hash lives 2 × (burst/rate + lease TTL) after its
 * last call (lua/lease.lua's PEXPIRE) and then is a full bucket again; budget
 * counters expire with their TTL. Its clock is an argument here.
 */
import { describe, expect, it } from 'vitest';
import { createBucketShape } from '../../../src/limits/algorithm/token-bucket.js';
import { LimitsPrimary } from '../../../src/coordination/ipc-primary.js';
import type { LeaseCallArgs } from '../../../src/coordination/lease-script.js';

function leaseCall(over: Partial<LeaseCallArgs>): LeaseCallArgs {
  const shape = createBucketShape(1, 10); // 10 units, 1 per second
  return {
    key: 'tg:{key:a}:rpm',
    hashTag: 'key:a',
    nodeId: 'w1',
    seq: 1,
    reportId: 0,
    keep: 0,
    returned: 0,
    refunded: 0,
    refundedSince: 0,
    debt: 0,
    want: 10,
    min: 0,
    burst: shape.capacity,
    rateNum: shape.rateNum,
    rateDen: shape.rateDen,
    leaseTtlMs: 1000,
    startEmpty: false,
    spentBins: [],
    ...over,
  };
}

describe('the primary of serve --workers', () => {
  it('grants a burst once across workers, then only what refills', () => {
    let now = 1_000_000;
    const primary = new LimitsPrimary({ now: () => now });
    try {
      const [first] = primary.lease([leaseCall({ nodeId: 'w1' })]);
      const [second] = primary.lease([leaseCall({ nodeId: 'w2' })]);
      expect(first!.granted).toBe(10);
      expect(second!.granted).toBe(0);
      now += 500;
      // w1's lease is live: nothing refills into the room it holds.
      expect(primary.lease([leaseCall({ nodeId: 'w2', seq: 2 })])[0]!.granted).toBe(0);
    } finally {
      primary.close();
    }
  });

  it('ignores a stale call until the bucket expires at the script TTL after its last call', () => {
    let now = 1_000_000;
    const primary = new LimitsPrimary({ now: () => now });
    try {
      primary.lease([leaseCall({ seq: 5 })]);
      expect(primary.lease([leaseCall({ seq: 5 })])[0]!.status).toBe(0);
      // 2 × (10 s to refill the burst + 1 s lease TTL) = 22 s: until then the hash, and w1's last call number, are kept.
      now += 21_999;
      expect(primary.lease([leaseCall({ seq: 5 })])[0]!.status).toBe(0);
      now += 1;
      expect(primary.size().buckets).toBe(1);
      // Gone, as the key in Redis would be: a full bucket that has never seen w1.
      const [fresh] = primary.lease([leaseCall({ seq: 5 })]);
      expect(fresh!.status).toBe(1);
      expect(fresh!.granted).toBe(10);
    } finally {
      primary.close();
    }
  });

  it('keeps budget counters until their TTL, like Redis', () => {
    let now = 1_000_000;
    const primary = new LimitsPrimary({ now: () => now });
    try {
      expect(primary.reserveBudget('b', 1000, 600, 0, 5000, 600)).toEqual([1, 0, 600]);
      expect(primary.reserveBudget('b', 1000, 600, 0, 5000, 100)).toEqual([1, 600, 400]);
      expect(primary.reserveBudget('b', 1000, 600, 0, 5000, 100)).toEqual([0, 1000, 0]);
      primary.adjustBudget('b', -300);
      expect(primary.reserveBudget('b', 1000, 300, 0, 5000, 300)).toEqual([1, 700, 300]);
      now += 5000;
      // Expired: a new period's counter, seeded by the caller.
      expect(primary.reserveBudget('b', 1000, 100, 250, 5000, 100)).toEqual([1, 250, 100]);
    } finally {
      primary.close();
    }
  });
});
