/**
 * A deterministic cluster: N real lease stores (src/coordination/lease-store.ts)
 * on one bucket kept by the script's model (lease-script-model.ts), on vitest's
 * fake timers, so every run of a seed is the same. Each node runs `clients`
 * request loops: reserve a random cost, hold it a random while, settle at a
 * random share of the reservation (the refund goes back), retry shortly after
 * a refusal. Returns every flow (admitted +cost, refunded −amount) with its
 * time, for the window bound and for how much of the limit the cluster used.
 */
import { vi } from 'vitest';
import { createLeaseLimiter, type LeaseLimiter } from '../../../src/coordination/lease-store.js';
import { runLeaseModel, type ModelHash } from '../../../src/coordination/lease-script-model.js';
import type { LeaseOutcome, LeaseTransport } from '../../../src/coordination/lease-script.js';
import type { BucketRef } from '../../../src/limits/limiter.js';

export interface Workload {
  readonly seed: number;
  readonly nodes: number;
  readonly clients: number;
  readonly burst: number;
  readonly ratePerSec: number;
  readonly durationMs: number;
  /** Reserved cost, uniform in [min, max]. */
  readonly cost: { readonly min: number; readonly max: number };
  /** Actual = round(reserved × factor), factor uniform in [min, max]. */
  readonly factor: { readonly min: number; readonly max: number };
  /** How long a request holds its reservation before settling, ms, uniform in [0, max]. */
  readonly holdMs: number;
  /** One-way delay to and from the script, ms. */
  readonly latencyMs: number;
  readonly leaseTtlMs: number;
}

export interface WorkloadResult {
  /** [ms, +admitted | −refunded], in time order. */
  readonly flows: [number, number][];
  readonly reserved: number;
  /** Admitted minus refunded: what the cluster let through. */
  readonly net: number;
  /** burst + rate·duration: what the limit allows over the run. */
  readonly allowed: number;
  readonly refusals: number;
  readonly calls: number;
}

/** mulberry32: a small seeded generator, so a seed replays exactly. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs the workload on fake timers; restores real timers before returning. */
export async function runWorkload(w: Workload): Promise<WorkloadResult> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date'], now: 1_000_000 });
  try {
    return await run(w);
  } finally {
    vi.useRealTimers();
  }
}

async function run(w: Workload): Promise<WorkloadResult> {
  const random = seeded(w.seed);
  const uniform = (min: number, max: number) => min + random() * (max - min);
  const hash: ModelHash = new Map();
  let calls = 0;
  const transport: LeaseTransport = {
    isClosed: () => false,
    run: (batch) =>
      new Promise<LeaseOutcome[]>((resolve) => {
        setTimeout(() => {
          // Redis reads its clock in whole ms.
          const replies = batch.map((call) => runLeaseModel(hash, call, Date.now()));
          calls += batch.length;
          setTimeout(() => resolve(replies.map((reply) => ({ ok: true as const, reply }))), w.latencyMs);
        }, w.latencyMs);
      }),
  };
  const bucket: BucketRef = { id: 'k:tokens', hashTag: 'k', limitName: 'tokens', ratePerSec: w.ratePerSec, burst: w.burst };
  const limiters: LeaseLimiter[] = Array.from({ length: w.nodes }, (_, i) =>
    createLeaseLimiter({
      transport,
      nodeId: `n${i}`,
      failMode: 'closed',
      leaseTtlMs: w.leaseTtlMs,
      maxWaitMs: 500,
      callTimeoutMs: 1000,
      now: () => Date.now(),
    }),
  );
  const start = Date.now();
  const end = start + w.durationMs;
  const flows: [number, number][] = [];
  let reserved = 0;
  let refusals = 0;

  const client = async (limiter: LeaseLimiter): Promise<void> => {
    // Clients do not start in lockstep.
    await sleep(Math.floor(uniform(0, 5)));
    while (Date.now() < end) {
      const cost = Math.floor(uniform(w.cost.min, w.cost.max + 1));
      const result = await limiter.acquire([{ bucket, cost }]);
      if (!result.ok) {
        refusals++;
        await sleep(1 + Math.floor(uniform(0, 3)));
        continue;
      }
      if (Date.now() >= end) {
        // Admitted after the run's end: not counted, handed back whole.
        limiter.settle(result.ticket, [0]);
        break;
      }
      flows.push([Date.now(), cost]);
      reserved += cost;
      await sleep(Math.floor(uniform(0, w.holdMs + 1)));
      const actual = Math.round(cost * uniform(w.factor.min, w.factor.max));
      limiter.settle(result.ticket, [actual]);
      if (cost > actual && Date.now() < end) flows.push([Date.now(), actual - cost]);
      else if (cost > actual) flows.push([end, 0]);
    }
  };

  const loops = limiters.flatMap((limiter) => Array.from({ length: w.clients }, () => client(limiter)));
  const done = Promise.all(loops);
  await vi.advanceTimersByTimeAsync(w.durationMs + w.holdMs + 600);
  await done;
  for (const limiter of limiters) void limiter.close();
  await vi.advanceTimersByTimeAsync(2 * w.latencyMs + 10);
  flows.sort((a, b) => a[0] - b[0]);
  const net = flows.reduce((sum, [, amount]) => sum + amount, 0);
  return { flows, reserved, net, allowed: w.burst + (w.ratePerSec * w.durationMs) / 1000, refusals, calls };
}

/** The largest excess of net spend over burst + rate·Δ in any window (≤ 0: no over-grant). */
export function worstWindowExcess(flows: readonly [number, number][], burst: number, ratePerSec: number): number {
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < flows.length; i++) {
    if (flows[i]![1] <= 0) continue;
    // Every refund at the window's first instant counts in it too.
    let j0 = i;
    while (j0 > 0 && flows[j0 - 1]![0] === flows[i]![0]) j0--;
    let net = 0;
    for (let j = j0; j < flows.length; j++) {
      net += flows[j]![1];
      const excess = net - (burst + (ratePerSec * (flows[j]![0] - flows[i]![0])) / 1000);
      if (excess > worst) worst = excess;
    }
  }
  return worst;
}
