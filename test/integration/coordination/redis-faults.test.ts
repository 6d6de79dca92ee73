/**
 * The lease store when Redis is slow (CLIENT PAUSE) or gone (SIGKILL, then
 * restarted empty): no exception escapes, requests never wait past the bound,
 * the fail mode is honoured, nothing is half-debited, and leasing resumes by
 * itself. Real time is the point here, but nothing depends on the machine's
 * speed: "did not wait for Redis" is checked against the pause itself (the
 * answer came while Redis was still paused), and every wait is on a condition.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AcquireResult, BucketRef, LimiterObserver } from '../../../src/limits/limiter.js';
import { createLeaseLimiter, type LeaseLimiter, type LeaseLimiterOptions } from '../../../src/coordination/lease-store.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: RedisHandle;
let clients: Redis[];
let limiters: LeaseLimiter[];
const limiterClients = new WeakMap<LeaseLimiter, Redis>();
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
// is what src/coordination/create-limiter.ts uses.
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

/** A `CLIENT PAUSE … ALL` in force: `over` turns true once Redis serves commands again. */
interface Pause {
  readonly over: boolean;
  readonly ended: Promise<void>;
}

/**
 * Pauses every client of Redis for `ms`. A second connection, ready before
 * the pause, sends a PING right after it: Redis answers it only once the
 * pause is over, which tells the test when it ended without timing it.
 */
async function pauseRedis(ms: number): Promise<Pause> {
  const admin = connectAdmin();
  const watcher = connectAdmin();
  await Promise.all([admin.ping(), watcher.ping()]);
  await admin.call('CLIENT', 'PAUSE', String(ms), 'ALL');
  const pause = { over: false, ended: Promise.resolve() };
  pause.ended = watcher.ping().then(
    () => {
      pause.over = true;
    },
    () => undefined, // the test ended first and closed the connection
  );
  return pause;
}

interface Recorded {
  failMode: [boolean, string][];
  grants: number[];
  /** Lease calls that completed (whatever their outcome). */
  calls: number;
}

function createLimiter(options: Partial<LeaseLimiterOptions>): { limiter: LeaseLimiter; seen: Recorded } {
  const seen: Recorded = { failMode: [], grants: [], calls: 0 };
  const observer: LimiterObserver = {
    failMode: (entered, reason) => seen.failMode.push([entered, reason]),
    leaseTopUp: (_id, granted) => seen.grants.push(granted),
    redisCall: () => {
      seen.calls += 1;
    },
  };
  const redis = connect();
  const limiter = createLeaseLimiter({
    redis,
    maxWaitMs: 50,
    callTimeoutMs: 150,
    breakerThreshold: 2,
    breakerCooldownMs: 300,
    leaseTtlMs: 1000,
    observer,
    ...options,
  });
  limiters.push(limiter);
  limiterClients.set(limiter, redis);
  return { limiter, seen };
}

function bucket(burst: number, ratePerSec: number): BucketRef {
  const hashTag = `key:${randomUUID()}`;
  return { id: `${hashTag}:b`, hashTag, limitName: 'b', ratePerSec, burst };
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting until ${what}`);
}

/**
 * The first call also loads the script: let it take its time. Connected
 * first, as the proxy is before it serves (create-limiter.ts): a fail-fast
 * client fails every call until then, and two failures open the breaker.
 */
async function warmUp(limiter: LeaseLimiter, b: BucketRef): Promise<void> {
  const client = limiterClients.get(limiter)!;
  await waitUntil("the limiter's client is connected", () => client.status === 'ready');
  await waitUntil('the first lease is granted', async () => (await limiter.acquire([{ bucket: b, cost: 1 }])).ok);
}

describe.each(CLIENT_OPTIONS)('lease store when Redis is slow or gone ($name)', ({ options }) => {
  beforeEach(() => {
    clientOptions = options;
  });

  it('fails closed within the wait bound while Redis is paused, then resumes', async () => {
    const { limiter, seen } = createLimiter({ failMode: 'closed' });
    const b = bucket(1000, 1000);
    await warmUp(limiter, b);
    // A pause 40 times the wait bound: a request answered while it lasts did
    // not wait for Redis, however slow the machine.
    const pause = await pauseRedis(2000);
    const during: { result: AcquireResult; whilePaused: boolean }[] = [];
    // Each asks for more than any lease holds: it must ask Redis.
    for (let i = 0; i < 8; i++) {
      const result = await limiter.acquire([{ bucket: b, cost: 900 }]);
      during.push({ result, whilePaused: !pause.over });
    }
    for (const { result, whilePaused } of during) {
      expect(result).toMatchObject({ ok: false, reason: 'unavailable' });
      expect(whilePaused).toBe(true);
    }
    expect(seen.failMode[0]?.[0]).toBe(true);
    // Once the pause ends, the breaker's probe succeeds and leasing resumes
    // (within a cooldown and a call timeout; 5 s is slack for a loaded machine).
    await pause.ended;
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
    // A request that outgrows the lease waits for Redis only `maxWaitMs`: on a
    // loaded machine a top-up may take longer, so ask until each is served.
    for (let i = 0; i < 5; i++) await waitUntil('a cost of 2 is admitted', async () => (await limiter.acquire([{ bucket: key, cost: 2 }])).ok);
    const keyLease = () => limiter.describeLeases().find((l) => l.id === key.id)!;
    await waitUntil('the key lease holds tokens', () => keyLease().avail > 0);
    const before = keyLease();
    const pause = await pauseRedis(1000);
    const result = await limiter.acquire([
      { bucket: key, cost: 1 },
      { bucket: tenant, cost: 1 },
    ]);
    // Answered while Redis was paused: the tenant level never reached it.
    expect(pause.over).toBe(false);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toBe('unavailable');
      expect(result.refusedBy).toBe(tenant);
    }
    expect(keyLease().avail).toBe(before.avail);
  }, 20_000);

  it('fails open without counting while Redis is paused', async () => {
    const { limiter } = createLimiter({ failMode: 'open' });
    const b = bucket(100, 1);
    const pause = await pauseRedis(2000);
    for (let i = 0; i < 5; i++) {
      expect((await limiter.acquire([{ bucket: b, cost: 90 }])).ok).toBe(true);
      expect(pause.over).toBe(false); // admitted while Redis was paused: nobody waited for it
    }
    await pause.ended;
    // Leasing resumes: a request served from a lease, not admitted by the fail mode.
    await waitUntil('a request is served through Redis again', async () => (await limiter.acquire([{ bucket: b, cost: 1 }])).ok && !limiter.isDegraded);
    // Nothing admitted while open was charged: 450 would leave the bucket
    // deep in debt. (The calls sent during the pause ran when it ended; what
    // they granted never reached the node and counts as spent — docs/leases.md,
    // "Known bounds" — so the burst itself is not all back.)
    const fields = await connectAdmin().hgetall(`tg:{${b.hashTag}}:b`);
    expect(Number(fields.tokens)).toBeGreaterThanOrEqual(0);
  }, 20_000);

  it('falls back to a local share when Redis is killed, and resumes leasing after a restart', async () => {
    const { limiter, seen } = createLimiter({ failMode: 'local' });
    const b = bucket(10, 10);
    await warmUp(limiter, b);
    await server.kill9();
    let admitted = 1;
    let unavailable = 0;
    const ask = async () => {
      const result = await limiter.acquire([{ bucket: b, cost: 1 }]);
      if (result.ok) admitted++;
      else if (result.reason === 'unavailable') unavailable++;
    };
    // For a second, as fast as this machine goes: one node alone holds the
    // whole share, so at most the lease it already had plus rate·t (the share
    // starts empty) — the bound leaves a burst and 20% to spare.
    const started = Date.now();
    while (Date.now() - started < 1000) {
      await ask();
      await sleep(5);
    }
    const seconds = (Date.now() - started) / 1000;
    expect(admitted).toBeLessThanOrEqual(10 + 10 * seconds * 1.2 + 10);
    // And it keeps admitting from that share (on a busy machine the second may
    // have held few requests, so ask on until it has admitted a few).
    await waitUntil('the local share admits', async () => {
      await ask();
      return admitted > 5;
    });
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
    const pause = await pauseRedis(1500);
    // The first request that needs Redis meets the fail mode: the share is
    // created empty and refills at 100/s, so 0.4 s later it holds a cost of 40.
    expect((await limiter.acquire([{ bucket: b, cost: 40 }])).ok).toBe(false);
    expect(pause.over).toBe(false);
    await waitUntil('the local share admits a cost of 40', async () => (await limiter.acquire([{ bucket: b, cost: 40 }])).ok);
    const admin = connectAdmin();
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
    // The first requests' calls fail, and two in a row open the breaker: from
    // then on a refusal tells the client to come back after the cooldown.
    await waitUntil('the breaker opens', async () => {
      const refused = await limiter.acquire([{ bucket: b, cost: 99 }]);
      return !refused.ok && refused.retryAfterMs > 1000;
    });
    // From then on refusals send no call at all (the cooldown is 5 s). The
    // call count is the proof: a call sent would have failed and been counted
    // within its 150 ms timeout, so wait past that. (No time bound: a request
    // that did wait would wait only `maxWaitMs`, too short to tell apart.)
    const callsBefore = seen.calls;
    const result = await limiter.acquire([{ bucket: b, cost: 99 }]);
    expect(result).toMatchObject({ ok: false, reason: 'unavailable' });
    await sleep(400);
    expect(seen.calls).toBe(callsBefore);
    await server.restart();
  }, 20_000);
});
