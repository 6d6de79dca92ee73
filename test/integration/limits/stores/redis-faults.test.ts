/**
 * The Redis store when Redis is slow (CLIENT PAUSE) or gone (SIGKILL, then
 * restarted empty): no exception escapes, requests never wait past the bound,
 * the fail mode is honoured, nothing is half-debited, and leasing resumes by
 * itself. Real time is the point here.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AcquireResult, BucketRef, LimiterObserver } from '../../../../src/limits/limiter.js';
import { createRedisLimiter, type RedisLimiter, type RedisLimiterOptions } from '../../../../src/limits/stores/redis-store.js';
import { startRedis, type RedisHandle } from '../../../support/redis.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: RedisHandle;
let clients: Redis[];
let limiters: RedisLimiter[];
let unhandled: unknown[];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeEach(async () => {
  server = await startRedis();
  clients = [];
  limiters = [];
  unhandled = [];
  process.on('unhandledRejection', onUnhandled);
});

afterEach(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  for (const client of clients) client.disconnect();
  await server.stop();
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

// Both ways a proxy may configure its client: ioredis' defaults (commands
// queue while reconnecting) and fail-fast (no offline queue, one retry), which
// is what src/limits/stores/create.ts uses.
const CLIENT_OPTIONS = [
  { name: 'queueing client', options: { retryStrategy: () => 50 } },
  { name: 'fail-fast client', options: { retryStrategy: () => 50, enableOfflineQueue: false, maxRetriesPerRequest: 1 } },
] as const;
let clientOptions: (typeof CLIENT_OPTIONS)[number]['options'] = CLIENT_OPTIONS[0].options;

function connect(): Redis {
  const client = new Redis(server.url, clientOptions);
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** The test's own connection (CLIENT PAUSE, checks): always queueing, so it waits to connect. */
function connectAdmin(): Redis {
  const client = new Redis(server.url, { retryStrategy: () => 50 });
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

interface Recorded {
  failMode: [boolean, string][];
  grants: number[];
  /** Lease calls that reached the pipeline (sent, whatever their outcome). */
  calls: number;
}

function createLimiter(options: Partial<RedisLimiterOptions>): { limiter: RedisLimiter; seen: Recorded } {
  const seen: Recorded = { failMode: [], grants: [], calls: 0 };
  const observer: LimiterObserver = {
    failMode: (entered, reason) => seen.failMode.push([entered, reason]),
    leaseTopUp: (_id, granted) => seen.grants.push(granted),
    redisCall: () => {
      seen.calls += 1;
    },
  };
  const limiter = createRedisLimiter({
    redis: connect(),
    maxWaitMs: 50,
    callTimeoutMs: 150,
    breakerThreshold: 2,
    breakerCooldownMs: 300,
    leaseTtlMs: 1000,
    observer,
    ...options,
  });
  limiters.push(limiter);
  return { limiter, seen };
}

function bucket(burst: number, ratePerSec: number): BucketRef {
  const hashTag = `key:${randomUUID()}`;
  return { id: `${hashTag}:b`, hashTag, limitName: 'b', ratePerSec, burst };
}

async function timed(run: () => Promise<AcquireResult>): Promise<{ result: AcquireResult; ms: number }> {
  const started = performance.now();
  const result = await run();
  return { result, ms: performance.now() - started };
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** The first call also connects and loads the script: let it take its time. */
async function warmUp(limiter: RedisLimiter, b: BucketRef): Promise<void> {
  await waitUntil('the first lease is granted', async () => (await limiter.acquire([{ bucket: b, cost: 1 }])).ok);
}

describe.each(CLIENT_OPTIONS)('redis store when Redis is slow or gone ($name)', ({ options }) => {
  beforeEach(() => {
    clientOptions = options;
  });

  it('fails closed within the wait bound while Redis is paused, then resumes', async () => {
    const { limiter, seen } = createLimiter({ failMode: 'closed' });
    const b = bucket(1000, 1000);
    await warmUp(limiter, b);
    const admin = connectAdmin();
    // A pause far longer than the wait bound, so a request that waited for Redis
    // is told apart from one that did not even on a loaded machine.
    await admin.call('CLIENT', 'PAUSE', '2000', 'ALL');
    const during: { result: AcquireResult; ms: number }[] = [];
    // Each asks for more than any lease holds: it must ask Redis.
    for (let i = 0; i < 8; i++) during.push(await timed(() => limiter.acquire([{ bucket: b, cost: 900 }])));
    for (const { result, ms } of during) {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toBe('unavailable');
      expect(ms).toBeLessThan(600);
    }
    expect(seen.failMode[0]?.[0]).toBe(true);
    // Once the pause ends, the breaker's probe succeeds and leasing resumes.
    await waitUntil('a request is served through Redis again', async () => (await limiter.acquire([{ bucket: b, cost: 5 }])).ok);
    await waitUntil('the fail mode is left', () => !limiter.isDegraded);
    expect(seen.failMode.at(-1)).toEqual([false, 'redis reachable again']);
  }, 20_000);

  it('never half-debits a request across levels when one level needs Redis', async () => {
    const { limiter } = createLimiter({ failMode: 'closed' });
    const key = bucket(100, 1);
    const tenant = bucket(100, 1);
    // Warm a lease on the key level only.
    await warmUp(limiter, key);
    for (let i = 0; i < 5; i++) expect((await limiter.acquire([{ bucket: key, cost: 2 }])).ok).toBe(true);
    const before = limiter.describeLeases().find((l) => l.id === key.id)!;
    expect(before.avail).toBeGreaterThan(0);
    const admin = connectAdmin();
    await admin.call('CLIENT', 'PAUSE', '500', 'ALL');
    const result = await limiter.acquire([
      { bucket: key, cost: 1 },
      { bucket: tenant, cost: 1 },
    ]);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toBe('unavailable');
      expect(result.refusedBy).toBe(tenant);
    }
    const after = limiter.describeLeases().find((l) => l.id === key.id)!;
    expect(after.avail).toBe(before.avail);
  }, 20_000);

  it('fails open without counting while Redis is paused', async () => {
    const { limiter } = createLimiter({ failMode: 'open' });
    const b = bucket(100, 1);
    const admin = connectAdmin();
    await admin.call('CLIENT', 'PAUSE', '2000', 'ALL');
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await timed(() => limiter.acquire([{ bucket: b, cost: 90 }])));
    for (const { result, ms } of results) {
      expect(result.ok).toBe(true);
      expect(ms).toBeLessThan(600); // far below the pause: nobody waited for Redis
    }
    await sleep(2100);
    // Nothing was debited while open: the whole burst is still there.
    await waitUntil('Redis answers again', async () => (await limiter.acquire([{ bucket: b, cost: 100 }])).ok);
  }, 20_000);

  it('falls back to a local share when Redis is killed, and resumes leasing after a restart', async () => {
    const { limiter, seen } = createLimiter({ failMode: 'local' });
    const b = bucket(10, 10);
    await warmUp(limiter, b);
    await server.kill9();
    const started = Date.now();
    let admitted = 1;
    let unavailable = 0;
    while (Date.now() - started < 1000) {
      const { result, ms } = await timed(() => limiter.acquire([{ bucket: b, cost: 1 }]));
      expect(ms).toBeLessThan(1000); // never hangs on the dead Redis
      if (result.ok) admitted++;
      else if (result.reason === 'unavailable') unavailable++;
      await sleep(5);
    }
    // One node alone holds the whole share: burst + rate·t, plus the lease it already had.
    expect(admitted).toBeGreaterThan(5);
    expect(admitted).toBeLessThanOrEqual(10 + 10 * 1.2 + 10);
    expect(unavailable).toBe(0);
    expect(seen.failMode.some(([entered]) => entered)).toBe(true);

    await server.restart();
    const grantsBefore = seen.grants.filter((g) => g > 0).length;
    await waitUntil('leases come from Redis again', async () => {
      await limiter.acquire([{ bucket: b, cost: 1 }]);
      return !limiter.isDegraded && seen.grants.filter((g) => g > 0).length > grantsBefore;
    });
    // The restarted Redis has no script cached: EVALSHA fell back to EVAL.
    const check = connectAdmin();
    expect(await check.hexists(`tg:{${b.hashTag}}:b`, 'tokens')).toBe(1);
  }, 20_000);

  it('charges what the local share admitted to Redis once it answers again', async () => {
    const { limiter } = createLimiter({ failMode: 'local' });
    const b = bucket(1000, 100);
    await warmUp(limiter, b);
    const admin = connectAdmin();
    await admin.call('CLIENT', 'PAUSE', '800', 'ALL');
    // The first request that needs Redis meets the fail mode: the share is
    // created empty and refills at 100/s, so ~0.5 s later it holds a cost of 40.
    expect((await limiter.acquire([{ bucket: b, cost: 40 }])).ok).toBe(false);
    await sleep(500);
    const fallback = await limiter.acquire([{ bucket: b, cost: 40 }]);
    expect(fallback.ok).toBe(true);
    await waitUntil('the fail mode is left', async () => {
      await limiter.acquire([{ bucket: b, cost: 1 }]);
      return !limiter.isDegraded;
    });
    await waitUntil('the debt reached Redis', async () => {
      const fields = await admin.hgetall(`tg:{${b.hashTag}}:b`);
      const leased = Object.entries(fields)
        .filter(([field]) => field.startsWith('l:'))
        .reduce((sum, [, value]) => sum + Number(value), 0);
      // A full bucket less the 40 the local share handed out.
      return Number(fields.tokens) + leased <= 960;
    });
  }, 20_000);

  it('stops waiting on a dead Redis once the breaker opens', async () => {
    const { limiter, seen } = createLimiter({ failMode: 'closed', breakerCooldownMs: 5000 });
    const b = bucket(100, 1);
    await warmUp(limiter, b);
    await server.kill9();
    // The first requests wait their bound; their calls time out and trip the breaker...
    for (let i = 0; i < 3; i++) {
      await limiter.acquire([{ bucket: b, cost: 99 }]);
      await sleep(200);
    }
    // ...after which refusals are immediate, because no call is even sent —
    // one would have failed and been counted within its 150 ms timeout. The
    // call count is the proof; the time bound is loose on purpose (two busy
    // cores can stall a process for tens of ms).
    const callsBefore = seen.calls;
    const { result, ms } = await timed(() => limiter.acquire([{ bucket: b, cost: 99 }]));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toBe('unavailable');
    expect(ms).toBeLessThan(500);
    await sleep(400);
    expect(seen.calls).toBe(callsBefore);
    await server.restart();
  }, 20_000);
});
