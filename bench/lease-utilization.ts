/**
 * How much of a shared limit four nodes let through: four lease stores in one
 * process, each with its own ioredis connection and node id, on one tokens
 * bucket in a real redis-server, for 4 s of real time. Each node runs request
 * loops that reserve 10–100 tokens, hold the reservation 0–`holdMs` ms and
 * settle at 0–100% of it (the rest is refunded). Demand is far above the
 * rate, so one exact bucket would let through burst + rate·t of net spend
 * (admitted minus refunded); the bench reports the share the cluster reached
 * and the tightest window against burst + rate·Δ (above 0 would be an
 * over-grant). The same workload on fake timers is asserted in
 * test/unit/coordination/lease-utilization.test.ts.
 *
 *   npx tsx bench/lease-utilization.ts            3 rounds per load
 *   npx tsx bench/lease-utilization.ts --quick    1 round
 *
 * Needs a quiet machine: on a busy one the event loop, not the protocol,
 * decides how much gets through. Starts its own redis-server on a free port.
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createLeaseLimiter } from '../src/coordination/lease-store.js';
import type { BucketRef } from '../src/limits/limiter.js';
import { startRedis } from '../test/support/redis.js';
import type { BenchResult } from './support.js';

const NODES = 4;
const CLIENTS = 8;
const DURATION_MS = 4000;
const RATE = 600;
const BURST = 600;

interface Round {
  net: number;
  allowed: number;
  reserved: number;
  worstWindow: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Net spend (admitted − refunded) in the worst window, less burst + rate·Δ (≤ 0: no over-grant). */
function worstWindow(flows: [number, number][]): number {
  flows.sort((a, b) => a[0] - b[0]);
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < flows.length; i++) {
    if (flows[i]![1] <= 0) continue;
    let net = 0;
    for (let j = i; j < flows.length; j++) {
      net += flows[j]![1];
      // 2 ms of slack: a stamp is taken around the admission, not at it.
      worst = Math.max(worst, net - (BURST + (RATE * (flows[j]![0] - flows[i]![0] + 2)) / 1000));
    }
  }
  return worst;
}

async function round(url: string, holdMs: number): Promise<Round> {
  const hashTag = `bench:${Date.now()}:${Math.random()}`;
  const bucket: BucketRef = { id: `${hashTag}:tokens`, hashTag, limitName: 'tokens', ratePerSec: RATE, burst: BURST };
  const connections = Array.from({ length: NODES }, () => new Redis(url));
  const limiters = connections.map((redis) => createLeaseLimiter({ redis, failMode: 'closed', leaseTtlMs: 2000, maxWaitMs: 500, callTimeoutMs: 1000 }));
  await Promise.all(connections.map((redis) => redis.ping()));
  const flows: [number, number][] = [];
  let reserved = 0;
  const start = performance.now();
  const end = start + DURATION_MS;
  const client = async (limiter: (typeof limiters)[number]): Promise<void> => {
    while (performance.now() < end) {
      const cost = 10 + Math.floor(Math.random() * 91);
      const result = await limiter.acquire([{ bucket, cost }]);
      if (!result.ok) {
        await sleep(1 + Math.random() * 2);
        continue;
      }
      if (performance.now() >= end) {
        limiter.settle(result.ticket, [0]);
        break;
      }
      flows.push([performance.now(), cost]);
      reserved += cost;
      await sleep(Math.random() * holdMs);
      const actual = Math.round(cost * Math.random());
      limiter.settle(result.ticket, [actual]);
      if (cost > actual && performance.now() < end) flows.push([performance.now(), actual - cost]);
    }
  };
  await Promise.all(limiters.flatMap((limiter) => Array.from({ length: CLIENTS }, () => client(limiter))));
  await Promise.all(limiters.map((limiter) => limiter.close()));
  for (const redis of connections) redis.disconnect();
  const net = flows.reduce((sum, [, amount]) => sum + amount, 0);
  return { net, allowed: BURST + (RATE * DURATION_MS) / 1000, reserved, worstWindow: worstWindow(flows) };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function runLeaseUtilizationBench(options: { quick?: boolean } = {}): Promise<BenchResult[]> {
  const rounds = options.quick ? 1 : 3;
  const server = await startRedis();
  const rows: BenchResult[] = [];
  try {
    for (const holdMs of [20, 300]) {
      const runs: Round[] = [];
      for (let i = 0; i < rounds; i++) runs.push(await round(server.url, holdMs));
      const shares = runs.map((run) => (100 * run.net) / run.allowed);
      rows.push({
        name: `shared tokens limit let through, 4 nodes, refunds, held 0–${holdMs} ms`,
        value: Number(median(shares).toFixed(1)),
        unit: '% of burst + rate·t',
        note: `600 tokens/s, burst 600, 4 s, ${NODES}×${CLIENTS} clients; rounds ${shares.map((s) => s.toFixed(1)).join(', ')}; reserved ${median(runs.map((r) => r.reserved))}; tightest window ${Math.max(...runs.map((r) => r.worstWindow)).toFixed(1)} from its bound`,
      });
    }
  } finally {
    await server.stop();
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runLeaseUtilizationBench({ quick: process.argv.includes('--quick') })
    .then((rows) => {
      for (const row of rows) console.log(`${row.name}: ${row.value} ${row.unit} (${row.note ?? ''})`);
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
