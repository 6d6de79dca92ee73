/**
 * Limiter benchmarks: local decisions per second and their latency, the
 * Redis path's decisions per second and latency, and Redis calls per
 * decision on a hot key (burst = 40 × cost) under three loads. Medians of
 * several runs. Local decisions use a fixed clock read per call
 * (performance.now), like the proxy.
 *
 *   npx tsx bench/limits.ts            full run, prints a table
 *   npx tsx bench/limits.ts --quick    shorter runs
 *
 * Starts its own redis-server on a free port (never the shared one).
 */
import { randomUUID } from 'node:crypto';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { BucketRef, Demand } from '../src/limits/limiter.js';
import { createLocalLimiter } from '../src/limits/local-store.js';
import { createLeaseLimiter } from '../src/coordination/lease-store.js';
import { startRedis } from '../test/support/redis.js';

export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function bucket(level: string, burst: number, ratePerSec: number): BucketRef {
  const hashTag = `${level}:${randomUUID()}`;
  return { id: `${hashTag}:b`, hashTag, limitName: 'b', ratePerSec, burst };
}

/** Key + tenant + global, never exhausted: every decision is a full admit. */
function threeLevels(): Demand[] {
  return [bucket('key', 1e12, 1e9), bucket('tenant', 1e12, 1e9), bucket('global', 1e12, 1e9)].map((b) => ({ bucket: b, cost: 1 }));
}

function benchLocalCore(ops: number, levels = 3): number {
  const limiter = createLocalLimiter();
  const demands = threeLevels().slice(0, levels);
  for (let i = 0; i < 200_000; i++) limiter.takeAll(demands);
  const started = performance.now();
  for (let i = 0; i < ops; i++) limiter.takeAll(demands);
  return (ops / (performance.now() - started)) * 1000;
}

/**
 * Young-generation collections during `ops` core decisions with the time
 * passed in (as the proxy passes its request timestamp): none means the
 * decision allocates nothing. (Reading `performance.now()` itself returns a
 * boxed double, which is the caller's allocation, not the decision's.)
 * Allocation is reported here rather than asserted in a test: a heap
 * comparison fails whenever a GC runs in between.
 */
async function countCoreCollections(ops: number): Promise<number> {
  const limiter = createLocalLimiter();
  const demands = threeLevels();
  let now = 0;
  for (let i = 0; i < 200_000; i++) limiter.takeAll(demands, now++);
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  observer.observe({ entryTypes: ['gc'] });
  for (let i = 0; i < ops; i++) limiter.takeAll(demands, now++);
  await new Promise((resolve) => setTimeout(resolve, 20));
  observer.disconnect();
  return collections;
}

function benchLocalAcquire(ops: number): number {
  const limiter = createLocalLimiter();
  const demands = threeLevels();
  for (let i = 0; i < 100_000; i++) limiter.acquireNow(demands);
  const started = performance.now();
  for (let i = 0; i < ops; i++) limiter.acquireNow(demands);
  return (ops / (performance.now() - started)) * 1000;
}

function benchLocalLatency(samples: number): { p50: number; p99: number } {
  const limiter = createLocalLimiter();
  const demands = threeLevels();
  for (let i = 0; i < 200_000; i++) limiter.takeAll(demands);
  const times = new Float64Array(samples);
  for (let i = 0; i < samples; i++) {
    const t0 = process.hrtime.bigint();
    limiter.takeAll(demands);
    times[i] = Number(process.hrtime.bigint() - t0);
  }
  times.sort();
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99) };
}

async function countScriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) total += Number(match[2]);
  return total;
}

interface RedisRun {
  perSec: number;
  callsPerDecision: number;
  p50Us: number;
  p99Us: number;
  refused: number;
}

/**
 * One node, 16 concurrent clients on one hot key, burst = 40 × cost, rate
 * not limiting. `spacingMs` > 0 spreads requests in time as a proxy sees
 * them; 0 drives the limiter as fast as the event loop turns.
 */
async function benchRedisHotKey(url: string, admin: Redis, durationMs: number, spacingMs: number): Promise<RedisRun> {
  const redis = new Redis(url);
  const limiter = createLeaseLimiter({ redis, failMode: 'closed', maxWaitMs: 1000 });
  const hot = bucket('key', 400, 1_000_000);
  const cost = 10;
  await limiter.acquire([{ bucket: hot, cost }]);
  const callsBefore = await countScriptCalls(admin);
  const latencies: number[] = [];
  let decisions = 0;
  let refused = 0;
  const endAt = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < endAt) {
        const t0 = performance.now();
        const result = await limiter.acquire([{ bucket: hot, cost }]);
        latencies.push((performance.now() - t0) * 1000);
        decisions++;
        if (!result.ok) refused++;
        if (spacingMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * spacingMs));
        else await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
  const elapsed = performance.now() - started;
  const calls = (await countScriptCalls(admin)) - callsBefore;
  await limiter.close();
  redis.disconnect();
  const sorted = Float64Array.from(latencies).sort();
  return {
    perSec: (decisions / elapsed) * 1000,
    callsPerDecision: calls / decisions,
    p50Us: percentile(sorted, 0.5),
    p99Us: percentile(sorted, 0.99),
    refused,
  };
}

/** Runs the limiter benchmarks; rows are medians over several runs. */
export async function runLimitsBench(opts: { quick?: boolean } = {}): Promise<BenchRow[]> {
  const runs = opts.quick ? 3 : 5;
  const ops = opts.quick ? 1_000_000 : 5_000_000;
  const rows: BenchRow[] = [];

  const single = Array.from({ length: runs }, () => benchLocalCore(ops, 1));
  rows.push({
    name: 'local decisions/s (one bucket, core path)',
    value: Math.round(median(single)),
    unit: 'decisions/s',
    note: `median of ${runs} runs of ${ops.toLocaleString('en-US')}, clock read each`,
  });
  const core = Array.from({ length: runs }, () => benchLocalCore(ops));
  rows.push({
    name: 'local decisions/s (key+tenant+global, core path)',
    value: Math.round(median(core)),
    unit: 'decisions/s',
    note: 'three buckets checked and debited all-or-none',
  });
  rows.push({
    name: 'GC collections during 5M core decisions (time passed in)',
    value: await countCoreCollections(5_000_000),
    unit: 'collections',
    note: '0 = no allocation in the decision',
  });
  const acquire = Array.from({ length: runs }, () => benchLocalAcquire(Math.floor(ops / 5)));
  rows.push({
    name: 'local acquire() decisions/s (with ticket + snapshots)',
    value: Math.round(median(acquire)),
    unit: 'decisions/s',
  });
  const latency = Array.from({ length: runs }, () => benchLocalLatency(opts.quick ? 200_000 : 1_000_000));
  rows.push({ name: 'local decision latency p50', value: median(latency.map((l) => l.p50)), unit: 'ns', note: 'includes ~40 ns of hrtime' });
  rows.push({ name: 'local decision latency p99', value: median(latency.map((l) => l.p99)), unit: 'ns', note: 'includes ~40 ns of hrtime' });

  const server = await startRedis();
  const admin = new Redis(server.url);
  try {
    const durationMs = opts.quick ? 1500 : 3000;
    const redisRuns = opts.quick ? 1 : 3;
    // Three loads on one hot key from one node: requests spread ~0–12 ms
    // apart per client (a few thousand/s), ~0–4 ms apart (~8000/s: the whole
    // burst is ~5 ms of demand), and as fast as the event loop turns.
    const loads = [
      { label: 'spread, ~2.5k/s', spacingMs: 12 },
      { label: 'spread, ~8k/s', spacingMs: 4 },
      { label: 'as fast as possible', spacingMs: 0 },
    ];
    for (const load of loads) {
      const results: RedisRun[] = [];
      for (let i = 0; i < redisRuns; i++) results.push(await benchRedisHotKey(server.url, admin, durationMs, load.spacingMs));
      const perSec = Math.round(median(results.map((r) => r.perSec)));
      rows.push({
        name: `redis calls per decision, hot key, burst = 40 × cost (${load.label})`,
        value: Number(median(results.map((r) => r.callsPerDecision)).toFixed(4)),
        unit: 'calls/decision',
        note: `EVALSHA+EVAL from INFO commandstats; ${perSec} decisions/s; refused ${median(results.map((r) => r.refused))}`,
      });
      if (load.spacingMs === 0) {
        rows.push({ name: 'redis-path decisions/s (one node, hot key, as fast as possible)', value: perSec, unit: 'decisions/s', note: '16 clients' });
      }
      rows.push({ name: `redis-path acquire latency p50 (${load.label})`, value: Math.round(median(results.map((r) => r.p50Us))), unit: 'µs' });
      rows.push({ name: `redis-path acquire latency p99 (${load.label})`, value: Math.round(median(results.map((r) => r.p99Us))), unit: 'µs' });
    }
  } finally {
    admin.disconnect();
    await server.stop();
  }
  return rows;
}

function printTable(rows: readonly BenchRow[]): void {
  const width = Math.max(...rows.map((r) => r.name.length));
  const values = rows.map((r) => r.value.toLocaleString('en-US', { maximumFractionDigits: 4 }));
  const valueWidth = Math.max(...values.map((v) => v.length));
  for (const [i, row] of rows.entries()) {
    const line = `${row.name.padEnd(width)}  ${values[i]!.padStart(valueWidth)} ${row.unit}`;
    console.log(row.note ? `${line}  (${row.note})` : line);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runLimitsBench({ quick: process.argv.includes('--quick') })
    .then(printTable)
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
