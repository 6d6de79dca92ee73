/**
 * Refund credit in lua/lease.lua (through its model, proven equal to the
 * script by test/integration/coordination/lease-script.test.ts): a refund of
 * spending already reported joins the bucket when its report arrives, and gets
 * at most the least room the bucket had since the refund could have happened
 * (docs/leases.md, "Refunds"). Bucket of 10 at 1 unit/ms, so time is units.
 */
import { describe, expect, it } from 'vitest';
import { runLeaseModel, type ModelHash } from '../../../src/coordination/lease-script-model.js';
import type { LeaseCallArgs } from '../../../src/coordination/lease-script.js';

const base: Omit<LeaseCallArgs, 'nodeId' | 'seq'> = {
  key: 'k',
  hashTag: 'k',
  reportId: 0,
  keep: 0,
  returned: 0,
  refunded: 0,
  refundedSince: 0,
  debt: 0,
  want: 0,
  min: 0,
  burst: 10,
  rateNum: 1,
  rateDen: 1,
  leaseTtlMs: 1000,
  startEmpty: false,
  spentBins: [],
};

describe('refund credit', () => {
  it('is lost when the bucket refilled to full before the refund (it would not have fit)', () => {
    const hash: ModelHash = new Map();
    // A leases all 10 and spends them at 0; its report at 1 frees the room.
    expect(runLeaseModel(hash, { ...base, nodeId: 'A', seq: 1, want: 10 }, 0).granted).toBe(10);
    runLeaseModel(hash, { ...base, nodeId: 'A', seq: 2, spentBins: [1, 10] }, 1);
    // By 20 the bucket is full again; A renews (its last reply is at 20).
    expect(runLeaseModel(hash, { ...base, nodeId: 'A', seq: 3 }, 20).tokens).toBe(10);
    // At 21 A's request settles at 0: 10 refunded, beyond its (empty) lease.
    // B takes the full bucket at 21 and spends it by 22.
    expect(runLeaseModel(hash, { ...base, nodeId: 'B', seq: 1, want: 10 }, 21).granted).toBe(10);
    runLeaseModel(hash, { ...base, nodeId: 'B', seq: 2, spentBins: [22, 10] }, 22);
    // One bucket would have dropped the refund at 21 (full): granting it now
    // would admit 10 + 8 within 1 ms. (The discount by refill since 20 that
    // the script used before granted 8 here.)
    const reply = runLeaseModel(hash, { ...base, nodeId: 'A', seq: 4, reportId: 4, refunded: 10, refundedSince: 20, want: 10 }, 22);
    expect(reply.granted).toBe(0);
  });

  it('is granted whole when the room it fills stayed free, however long it waited', () => {
    const hash: ModelHash = new Map();
    const slow = { ...base, rateDen: 10 }; // 1 unit per 10 ms
    // A and B each lease 5; A spends its 5 at 0 and reports at 1.
    runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 1, want: 5 }, 0);
    runLeaseModel(hash, { ...slow, nodeId: 'B', seq: 1, want: 5 }, 0);
    runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 2, spentBins: [1, 5] }, 1);
    // 31 ms later A's request settles at 1 of 5: 4 refunded. Meanwhile 3
    // refilled into the 5 freed, so 2 of room were left all along: one bucket
    // would hold 3 + 2 (the refund, less what did not fit).
    const reply = runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 3, reportId: 3, refunded: 4, refundedSince: 1, want: 10 }, 31);
    expect(reply.granted).toBe(5);
    // B's lease still counts: the bucket as one is full.
    expect(reply.tokens + reply.outstanding).toBe(10);
  });

  it('is not granted when the node cannot show when the refunds arose (its last calls ran after that date)', () => {
    const hash: ModelHash = new Map();
    const slow = { ...base, rateDen: 100 }; // 1 unit per 100 ms
    runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 1, want: 5 }, 0);
    runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 2, spentBins: [5, 5] }, 5);
    runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 3 }, 6);
    // 5 of room, but it is known only from A's call before last (5) on, not from 2.
    const reply = runLeaseModel(hash, { ...slow, nodeId: 'A', seq: 4, reportId: 4, refunded: 3, refundedSince: 2 }, 7);
    expect(reply.status).toBe(1);
    expect(reply.tokens).toBe(5);
  });
});
