/**
 * The lease store's lease lifecycle on a real redis-server: leases go back
 * when idle and on close, debt reaches the other nodes, excess is returned,
 * and the observer hooks report what happens.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BucketRef } from '../../../src/limits/limiter.js';
import { createLeaseLimiter, type LeaseLimiter, type LeaseLimiterOptions } from '../../../src/coordination/lease-store.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: RedisHandle;
let redis: Redis;
const open: LeaseLimiter[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((limiter) => limiter.close()));
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

// Bounds far above any stall of a loaded machine: a call that timed out yet
// ran in Redis would lose its grant (docs/leases.md, "Known bounds"), and
// these tests count tokens exactly.
function createLimiter(options: Partial<LeaseLimiterOptions> = {}): LeaseLimiter {
  const limiter = createLeaseLimiter({ redis, failMode: 'closed', maxWaitMs: 5000, callTimeoutMs: 5000, ...options });
  open.push(limiter);
  return limiter;
}

function bucket(burst: number, ratePerSec: number): BucketRef {
  const hashTag = `key:${randomUUID()}`;
  return { id: `${hashTag}:b`, hashTag, limitName: 'b', ratePerSec, burst };
}

async function readBucket(b: BucketRef): Promise<Record<string, string>> {
  return redis.hgetall(`tg:{${b.hashTag}}:${b.limitName}`);
}

function leaseOf(fields: Record<string, string>, nodeId: string): number {
  return Number(fields[`l:${nodeId}`] ?? 0);
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting until ${what}`);
}

describe('lease store lease lifecycle on Redis', () => {
  it('hands a lease back after two idle lease lives', async () => {
    // A lease life long enough that a busy machine renews it in time: one that
    // expired in Redis would not give its unspent tokens back.
    const limiter = createLimiter({ leaseTtlMs: 1000, tickMs: 20 });
    const b = bucket(100, 1 / 3600);
    for (let i = 0; i < 20; i++) await limiter.acquire([{ bucket: b, cost: 1 }]);
    const held = leaseOf(await readBucket(b), limiter.nodeId);
    expect(held).toBeGreaterThan(0);
    await waitUntil('the idle lease is returned', async () => leaseOf(await readBucket(b), limiter.nodeId) === 0);
    const fields = await readBucket(b);
    // Every token not spent went back: 100 − 20 spent.
    expect(Number(fields.tokens)).toBe(80);
    await waitUntil('the idle bucket is forgotten', () => limiter.describeLeases().length === 0);
  });

  it('leases a forgotten bucket again at once, though Redis remembers its call numbers', async () => {
    const limiter = createLimiter({ leaseTtlMs: 300, tickMs: 20 });
    const b = bucket(100, 1 / 3600);
    // Enough calls that a lease starting its call numbers over would stay stale for a while.
    for (let i = 0; i < 20; i++) expect((await limiter.acquire([{ bucket: b, cost: 2 }])).ok).toBe(true);
    await waitUntil('the idle bucket is forgotten', () => limiter.describeLeases().length === 0);
    // The bucket is used again while Redis still holds this node's last call number on it.
    const again = await limiter.acquire([{ bucket: b, cost: 1 }]);
    expect(again).toMatchObject({ ok: true });
    expect(limiter.isDegraded).toBe(false);
  });

  it('hands leases back on close', async () => {
    const limiter = createLimiter();
    const b = bucket(100, 1 / 3600);
    for (let i = 0; i < 10; i++) await limiter.acquire([{ bucket: b, cost: 1 }]);
    await limiter.close();
    const fields = await readBucket(b);
    expect(leaseOf(fields, limiter.nodeId)).toBe(0);
    expect(Number(fields.tokens)).toBe(90);
  });

  it('reports debt at once, so other nodes stop admitting too', async () => {
    const a = createLimiter();
    const other = createLimiter();
    const b = bucket(100, 1 / 3600);
    const result = await a.acquire([{ bucket: b, cost: 10 }]);
    if (!result.ok) throw new Error('expected admission');
    a.settle(result.ticket, [150]);
    await waitUntil('Redis holds the debt', async () => Number((await readBucket(b)).tokens) < 0);
    const refused = await other.acquire([{ bucket: b, cost: 1 }]);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.reason).toBe('rate_limited');
  });

  it('gives back what exceeds 1.5× a shrinking target', async () => {
    const limiter = createLimiter({ leaseTtlMs: 5000, tickMs: 20 });
    const b = bucket(1000, 1 / 3600);
    // Demand of a few hundred per second grows the lease...
    const until = Date.now() + 300;
    while (Date.now() < until) await limiter.acquire([{ bucket: b, cost: 10 }]);
    const grown = leaseOf(await readBucket(b), limiter.nodeId);
    // ...then stops: as the demand estimate decays, the excess goes back.
    await waitUntil('the excess is returned', async () => leaseOf(await readBucket(b), limiter.nodeId) < grown / 2, 5000);
  });

  it('tells the observer about calls, top-ups and decisions', async () => {
    const calls: boolean[] = [];
    const grants: number[] = [];
    const decisions: [string, boolean][] = [];
    const limiter = createLimiter({
      observer: {
        redisCall: (_op, ms, ok) => {
          expect(ms).toBeGreaterThanOrEqual(0);
          calls.push(ok);
        },
        leaseTopUp: (_id, granted) => grants.push(granted),
        decision: (name, allowed) => decisions.push([name, allowed]),
      },
    });
    const b = bucket(3, 1 / 3600);
    for (let i = 0; i < 4; i++) await limiter.acquire([{ bucket: b, cost: 1 }]);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every(Boolean)).toBe(true);
    expect(grants.reduce((sum, g) => sum + g, 0)).toBe(3);
    expect(decisions).toEqual([
      ['b', true],
      ['b', true],
      ['b', true],
      ['b', false],
    ]);
  });
});
