/**
 * Redis sees a few percent of the decisions on a hot key: with a burst of at
 * least 40× the average cost, calls per decision must stay ≤ 0.05
 * (docs/leases.md: calls ≈ cost ÷ lease size). Counted by Redis itself.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BucketRef } from '../../../src/limits/limiter.js';
import { createLeaseLimiter } from '../../../src/coordination/lease-store.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';

let server: RedisHandle;
let admin: Redis;

beforeAll(async () => {
  server = await startRedis();
  admin = new Redis(server.url);
});

afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

/**
 * Script calls Redis received (EVALSHA + EVAL): each is one round trip of the
 * limiter. commandstats also lists the commands run *inside* the script
 * (HGETALL, TIME, HSET, PEXPIRE); they are not separate calls.
 */
export async function countScriptCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) total += Number(match[2]);
  return total;
}

describe('Redis calls per decision', () => {
  it('stays at or below 0.05 on a hot key whose burst is 40× the cost', async () => {
    const redis = new Redis(server.url);
    // Calls are counted here, not timed: generous bounds, so a loaded machine
    // cannot turn a slow reply into an `unavailable` refusal.
    const limiter = createLeaseLimiter({ redis, failMode: 'closed', maxWaitMs: 5000, callTimeoutMs: 5000 });
    const hashTag = `key:${randomUUID()}`;
    // Not rate-limited (1M/s), so the lease size — capped by the burst — is what counts.
    const bucket: BucketRef = { id: `${hashTag}:tpm`, hashTag, limitName: 'tpm', ratePerSec: 1_000_000, burst: 400 };
    const cost = 10;
    await limiter.acquire([{ bucket, cost }]);
    const before = await countScriptCalls(admin);
    let decisions = 0;
    let admitted = 0;
    const refusals: string[] = [];
    // Requests arrive spread in time, as they reach a proxy: 16 clients, a
    // few ms apart each — a couple of thousand decisions per second on one
    // key from one node, so the whole burst is ~20 ms of demand.
    // (bench/limits.ts also reports harsher loads.)
    const endAt = Date.now() + 3000;
    const clients = Array.from({ length: 16 }, async () => {
      while (Date.now() < endAt) {
        const result = await limiter.acquire([{ bucket, cost }]);
        decisions++;
        if (result.ok) admitted++;
        else if (refusals.length < 5) refusals.push(`${result.reason} after ${result.retryAfterMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 12));
      }
    });
    await Promise.all(clients);
    const calls = (await countScriptCalls(admin)) - before;
    const perDecision = calls / decisions;
    console.info(`hot key, burst = 40 × cost: ${calls} Redis calls for ${decisions} decisions = ${perDecision.toFixed(4)} per decision`);
    // The bucket is never the limit here: every request must be admitted.
    expect(refusals).toEqual([]);
    expect(admitted).toBe(decisions);
    expect(perDecision).toBeLessThanOrEqual(0.05);
    await limiter.close();
    redis.disconnect();
  }, 60_000);
});
