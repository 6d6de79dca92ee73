/**
 * Real Redis, real processes: several proxy nodes (child processes, each its
 * own node id and connection) share one bucket. Real time is the point here.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BucketRef } from '../../../src/limits/limiter.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import type { WorkerConfig } from './fixtures/limiter-worker.js';
import { computeWorstWindowExcess, spawnWorker, type WorkerRun } from './fixtures/workers.js';

let server: RedisHandle;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

function freshBucket(burst: number, ratePerSec: number): BucketRef {
  const hashTag = `key:${randomUUID()}`;
  return { id: `${hashTag}:rpm`, hashTag, limitName: 'rpm', ratePerSec, burst };
}

async function runWorkers(count: number, base: Omit<WorkerConfig, 'nodeId' | 'redisUrl'>, during?: (runs: WorkerRun[]) => Promise<void>): Promise<WorkerRun[]> {
  const runs = Array.from({ length: count }, (_, i) => spawnWorker({ ...base, redisUrl: server.url, nodeId: `node-${i}-${randomUUID()}` }));
  await Promise.all(runs.map((run) => run.ready));
  const startAt = Date.now() + 200;
  for (const run of runs) run.start(startAt);
  if (during) await during(runs);
  await Promise.all(runs.map((run) => run.exited));
  return runs;
}

const admissions = (runs: WorkerRun[]) => runs.flatMap((run) => run.admitted);

describe('several proxy processes sharing one bucket', () => {
  it('admits at most burst + rate·t and not much less (burst 10 at 10/s, 3 s, 4 processes × 16 clients)', async () => {
    const bucket = freshBucket(10, 10);
    const runs = await runWorkers(4, {
      bucket,
      clients: 16,
      durationMs: 3000,
      failMode: 'closed',
      leaseTtlMs: 2000,
      cost: 1,
    });
    for (const run of runs) expect(run.errors).toEqual([]);
    const allowed = admissions(runs).length;
    // The same bound over every sliding window.
    const worst = computeWorstWindowExcess(admissions(runs), 10, 10);
    console.info(
      `over-grant test (burst 10 at 10/s, 3 s): allowed ${allowed} of a theoretical 40 (per process: ${runs.map((r) => r.admitted.length).join(', ')}); ` +
        `tightest window ${worst.toFixed(3)} from its bound`,
    );
    expect(allowed).toBeLessThanOrEqual(40);
    expect(allowed).toBeGreaterThanOrEqual(36);
    expect(worst).toBeLessThanOrEqual(0);
  }, 30_000);

  it('keeps the bound with weighted costs and refunds, and reuses what was refunded', async () => {
    const bucket = freshBucket(100, 100);
    const runs = await runWorkers(4, {
      bucket,
      clients: 8,
      durationMs: 3000,
      failMode: 'closed',
      leaseTtlMs: 2000,
      cost: { min: 1, max: 10 },
      settle: { min: 0, max: 1, delayMs: 20 },
    });
    for (const run of runs) expect(run.errors).toEqual([]);
    const flows: Array<[number, number] | [number, number, number]> = [
      ...admissions(runs),
      ...runs.flatMap((run) => run.settled.map(([t, reserved, actual]) => [t, actual - reserved] as [number, number])),
    ];
    expect(computeWorstWindowExcess(flows, 100, 100)).toBeLessThanOrEqual(0);
    const reserved = admissions(runs).reduce((sum, [, , cost]) => sum + cost, 0);
    const net = flows.reduce((sum, flow) => sum + flow[flow.length - 1]!, 0);
    console.info(`weighted with refunds: reserved ${reserved}, net ${net}, bound 400`);
    // Refunds were spent again: more was reserved than the bucket could give.
    expect(reserved).toBeGreaterThan(400);
    expect(net).toBeLessThanOrEqual(400);
  }, 30_000);

  it('keeps admissions bounded when actual costs exceed reservations (debt)', async () => {
    const bucket = freshBucket(100, 100);
    const runs = await runWorkers(4, {
      bucket,
      clients: 8,
      durationMs: 3000,
      failMode: 'closed',
      leaseTtlMs: 2000,
      cost: { min: 1, max: 10 },
      settle: { min: 1, max: 2, delayMs: 20 },
    });
    for (const run of runs) expect(run.errors).toEqual([]);
    const admitted = admissions(runs);
    expect(computeWorstWindowExcess(admitted, 100, 100)).toBeLessThanOrEqual(0);
    const consumed = runs.flatMap((run) => run.settled).reduce((sum, [, , actual]) => sum + actual, 0);
    const reserved = admitted.reduce((sum, [, , cost]) => sum + cost, 0);
    console.info(`underestimates: reserved ${reserved}, actually consumed ${consumed}, bound 400`);
    // Debt is repaid before more is admitted: total consumption stays within
    // the bound plus what requests still in flight at the end could add
    // (32 clients × at most 10 extra each).
    expect(consumed).toBeLessThanOrEqual(400 + 32 * 10);
    expect(reserved).toBeLessThan(400);
  }, 30_000);

  it('stays bounded when a node is SIGKILLed holding a lease, and its lease expires', async () => {
    const bucket = freshBucket(20, 10);
    const leaseTtlMs = 1000;
    const base = { bucket, clients: 8, failMode: 'closed' as const, leaseTtlMs, cost: 1 };
    // The victim takes 15 of the 20 into its lease and sits on them; two
    // busy nodes start 300 ms later; the victim dies at ~1 s.
    const victim = spawnWorker({ ...base, redisUrl: server.url, nodeId: `victim-${randomUUID()}`, durationMs: 10_000, holdLease: 15, reportLeaseMs: 5 });
    const survivors = [0, 1].map((i) => spawnWorker({ ...base, redisUrl: server.url, nodeId: `node-${i}-${randomUUID()}`, durationMs: 4000 }));
    await Promise.all([victim, ...survivors].map((run) => run.ready));
    const startAt = Date.now() + 200;
    victim.start(startAt);
    for (const run of survivors) run.start(startAt + 300);
    await victim.holdingLease;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt + 1000 - Date.now())));
    const heldAtKill = victim.lastLease;
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    await Promise.all([victim, ...survivors].map((run) => run.exited));

    expect(heldAtKill).toBeGreaterThanOrEqual(15);
    for (const run of survivors) expect(run.errors).toEqual([]);
    const runs = [victim, ...survivors];
    const flows: Array<[number, number] | [number, number, number]> = [
      ...admissions(runs),
      ...runs.flatMap((run) => run.settled.map(([t, reserved, actual]) => [t, actual - reserved] as [number, number])),
    ];
    expect(computeWorstWindowExcess(flows, 20, 10)).toBeLessThanOrEqual(0);
    // While the dead node's lease lives, the others share only what is left;
    // once it expired they get the whole rate again.
    const last = Math.max(...admissions(survivors).map(([t]) => t));
    const afterExpiry = admissions(survivors).filter(([t]) => t > killedAt + leaseTtlMs).length;
    const span = (last - (killedAt + leaseTtlMs)) / 1000;
    console.info(`node killed holding ${heldAtKill}; survivors admitted ${afterExpiry} in the ${span.toFixed(2)} s after its lease expired`);
    expect(afterExpiry).toBeGreaterThanOrEqual(Math.floor(10 * span * 0.8));
    // And Redis no longer counts the dead node's lease.
    const fields = await redis.hgetall(`tg:{${bucket.hashTag}}:rpm`);
    const victimLease = Object.entries(fields).find(([field]) => field.startsWith('l:victim-'));
    expect(victimLease?.[1] ?? '0').toBe('0');
  }, 30_000);
});
