/**
 * lua/lease.lua on a real redis-server: it agrees with its TypeScript model
 * (which the model test runs at scale), loads by EVALSHA with a NOSCRIPT
 * fallback, returns integers only, and sets the documented TTL.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeLeaseReply,
  encodeLeaseArgs,
  LEASE_SCRIPT,
  LEASE_SCRIPT_SHA,
  runLeaseCalls,
  type LeaseCallArgs,
  type LeaseReply,
} from '../../../src/coordination/lease-script.js';
import { createBucketShape } from '../../../src/limits/algorithm/token-bucket.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { runLeaseModel, type ModelHash } from '../../../src/coordination/lease-script-model.js';

let server: RedisHandle;
let redis: Redis;
let keys = 0;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

async function call(args: LeaseCallArgs): Promise<LeaseReply> {
  const [outcome] = await runLeaseCalls(redis, [args], 2000);
  if (!outcome?.ok) throw outcome?.error ?? new Error('no outcome');
  return outcome.reply;
}

/** Runs the script and PERSIST in one transaction, so a tiny TTL cannot expire the key mid-comparison. */
async function callKeepingKey(args: LeaseCallArgs): Promise<LeaseReply> {
  const replies = await redis
    .multi()
    .eval(LEASE_SCRIPT, 1, ...encodeLeaseArgs(args))
    .persist(args.key)
    .exec();
  const [error, value] = replies?.[0] ?? [new Error('no reply'), null];
  if (error) throw error;
  return decodeLeaseReply(value);
}

function baseCall(key: string, over: Partial<LeaseCallArgs> = {}): LeaseCallArgs {
  const shape = createBucketShape(10, 20);
  return {
    key,
    hashTag: 'test',
    nodeId: 'a',
    seq: 1,
    reportId: 0,
    keep: 0,
    returned: 0,
    refunded: 0,
    refundedSince: 0,
    debt: 0,
    want: 5,
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

const nextKey = () => `tg:{test}:script-${++keys}`;

describe('lease script on real Redis', () => {
  it('agrees with its TypeScript model on random call sequences', async () => {
    const callArb = fc.record({
      node: fc.integer({ min: 0, max: 2 }),
      stale: fc.boolean(),
      newReport: fc.boolean(),
      keep: fc.integer({ min: 0, max: 30 }),
      returned: fc.integer({ min: 0, max: 5 }),
      refunded: fc.integer({ min: 0, max: 5 }),
      debt: fc.integer({ min: 0, max: 5 }),
      want: fc.integer({ min: 0, max: 30 }),
      min: fc.integer({ min: 0, max: 10 }),
      pauseMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 25 })),
      // Spent-by offsets (around the previous reply's time) and amounts.
      bins: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 0, maxLength: 16 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          rate: fc.constantFrom(1, 10, 1000, 1 / 60, 2 / 3),
          burst: fc.integer({ min: 1, max: 40 }),
          ttl: fc.constantFrom(5, 20, 60_000),
          startEmpty: fc.boolean(),
        }),
        fc.array(callArb, { minLength: 1, maxLength: 25 }),
        async ({ rate, burst, ttl, startEmpty }, steps) => {
          const shape = createBucketShape(rate, burst);
          const key = nextKey();
          const model: ModelHash = new Map();
          const seqs = [0, 0, 0];
          const reports = [0, 0, 0];
          let lastNow = 0;
          for (const step of steps) {
            if (step.pauseMs > 0) await new Promise((r) => setTimeout(r, step.pauseMs));
            const node = step.node;
            if (!step.stale || seqs[node] === 0) seqs[node]! += 1;
            if (step.newReport) reports[node] = seqs[node]!;
            const args: LeaseCallArgs = {
              key,
              hashTag: 'test',
              nodeId: `n${node}`,
              seq: seqs[node]!,
              reportId: reports[node]!,
              keep: step.keep,
              returned: step.returned,
              refunded: step.refunded,
              // Sometimes before the node's last call or two: the least room
              // since then is then partly unknown (pm:, or no credit).
              refundedSince: Math.max(0, lastNow - 40 * (step.refunded % 3)),
              debt: step.debt,
              want: Math.max(step.want, step.min),
              min: step.min,
              burst: shape.capacity,
              rateNum: shape.rateNum,
              rateDen: shape.rateDen,
              leaseTtlMs: ttl,
              startEmpty,
              spentBins: step.bins.map((v, i) => (i % 2 === 0 && v > 0 ? lastNow + v - 20 : v)),
            };
            const reply = await callKeepingKey(args);
            for (const value of Object.values(reply)) expect(Number.isInteger(value)).toBe(true);
            const expected = runLeaseModel(model, args, reply.nowMs);
            expect(reply).toEqual(expected);
            const stored = await redis.hgetall(key);
            expect(stored).toEqual(Object.fromEntries(model));
            lastNow = reply.nowMs;
          }
          await redis.del(key);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('runs by EVALSHA and reloads the script after SCRIPT FLUSH', async () => {
    const key = nextKey();
    await call(baseCall(key));
    expect(await redis.script('EXISTS', LEASE_SCRIPT_SHA)).toEqual([1]);
    await redis.script('FLUSH');
    expect(await redis.script('EXISTS', LEASE_SCRIPT_SHA)).toEqual([0]);
    const reply = await call(baseCall(key, { seq: 2, keep: 5 }));
    expect(reply.status).toBe(1);
    expect(await redis.script('EXISTS', LEASE_SCRIPT_SHA)).toEqual([1]);
  });

  it('keeps a bucket about twice its refill time plus a lease life', async () => {
    const key = nextKey();
    await call(baseCall(key, { leaseTtlMs: 5000 }));
    const ttl = await redis.pttl(key);
    // burst 20 at 10/s = 2000 ms to refill; 2 × (2000 + 5000) = 14000 ms.
    expect(ttl).toBeGreaterThan(13_000);
    expect(ttl).toBeLessThanOrEqual(14_000);
  });

  it('ignores a stale call and applies a report only once', async () => {
    const key = nextKey();
    const first = await call(baseCall(key, { want: 20 }));
    expect(first.granted).toBe(20);
    const report = { reportId: 2, keep: 10, returned: 10 };
    const second = await call(baseCall(key, { seq: 2, want: 0, ...report }));
    expect(second.tokens).toBe(10);
    // The same report resent in a later call (reply lost) changes nothing twice.
    const third = await call(baseCall(key, { seq: 3, want: 0, ...report }));
    expect(third.tokens).toBe(second.tokens);
    // An old call arriving late is stale.
    const stale = await call(baseCall(key, { seq: 2, want: 20 }));
    expect(stale.status).toBe(0);
    expect(stale.granted).toBe(0);
  });

  it('grants nothing below min and says when min would fit', async () => {
    const key = nextKey();
    await call(baseCall(key, { want: 20 }));
    const reply = await call(baseCall(key, { seq: 2, keep: 20, want: 5, min: 5 }));
    expect(reply.granted).toBe(0);
    // Nothing is unleased: 5 tokens need 500 ms of refill — but the cap is 0
    // while this node holds all 20, so it is the lease that must end first.
    expect(reply.retryMs).toBeGreaterThanOrEqual(500);
  });

  it('starts an unseen bucket empty when asked', async () => {
    const reply = await call(baseCall(nextKey(), { startEmpty: true, want: 5 }));
    expect(reply.granted).toBe(0);
    expect(reply.tokens).toBe(0);
  });

  it('lets debt drive the balance negative until refill repays it', async () => {
    const key = nextKey();
    await call(baseCall(key, { want: 20 }));
    const reply = await call(baseCall(key, { seq: 2, reportId: 2, keep: 0, debt: 30, want: 0 }));
    expect(reply.tokens).toBeLessThanOrEqual(-29);
  });
});
