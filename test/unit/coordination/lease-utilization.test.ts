/**
 * What a shared limit lets through: four lease stores (the real node code)
 * on one bucket kept by the script's model, on fake timers, with requests
 * that reserve more than they use and are refunded at settlement. Demand is
 * far above the rate, so one bucket would let through burst + rate·t of net
 * spend; the cluster must come close to that (docs/leases.md, "Refunds") and
 * never exceed burst + rate·Δ in any window. Speed is not measured here
 * (bench/lease-utilization.ts runs the same on real Redis in real time).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runWorkload, worstWindowExcess, type Workload } from './lease-workload.js';

const tokens600: Workload = {
  seed: 1,
  nodes: 4,
  clients: 4,
  burst: 600,
  ratePerSec: 600,
  durationMs: 4000,
  cost: { min: 10, max: 100 },
  factor: { min: 0, max: 1 },
  holdMs: 20,
  latencyMs: 1,
  leaseTtlMs: 2000,
};

describe('a tokens limit shared by four nodes, with refunds', () => {
  it.each([
    ['600 tokens/s, reservations of 10–100 used 0–100%', tokens600],
    ['100 tokens/s, reservations of 1–10 used 0–100%', { ...tokens600, seed: 2, burst: 100, ratePerSec: 100, cost: { min: 1, max: 10 } }],
    ['600 tokens/s, requests held up to 300 ms, 5 ms to Redis', { ...tokens600, seed: 3, holdMs: 300, latencyMs: 5 }],
    ['600 tokens/s, reservations used 20–60%', { ...tokens600, seed: 4, factor: { min: 0.2, max: 0.6 } }],
  ])(
    '%s: at least 90% of burst + rate·t, never more in any window',
    async (_name, workload) => {
      const run = await runWorkload(workload);
      console.info(
        `${_name}: net ${run.net} of ${run.allowed} (${((100 * run.net) / run.allowed).toFixed(1)}%), reserved ${run.reserved}, ${run.calls} script calls`,
      );
      expect(worstWindowExcess(run.flows, workload.burst, workload.ratePerSec)).toBeLessThanOrEqual(1e-9);
      expect(run.net).toBeLessThanOrEqual(run.allowed);
      expect(run.net).toBeGreaterThanOrEqual(0.9 * run.allowed);
      // Refunded reservations were admitted again.
      expect(run.reserved).toBeGreaterThan(run.allowed);
    },
    60_000,
  );

  it('never lets through more than burst + rate·Δ in any window, whatever the workload', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          seed: fc.integer(),
          nodes: fc.integer({ min: 2, max: 4 }),
          clients: fc.integer({ min: 1, max: 3 }),
          burst: fc.integer({ min: 10, max: 400 }),
          ratePerSec: fc.constantFrom(10, 100, 600),
          durationMs: fc.constant(1200),
          cost: fc.integer({ min: 1, max: 10 }).map((min) => ({ min, max: min * 4 })),
          factor: fc.constantFrom({ min: 0, max: 1 }, { min: 0, max: 0.2 }, { min: 1, max: 1 }, { min: 0.5, max: 1.5 }),
          holdMs: fc.integer({ min: 0, max: 200 }),
          latencyMs: fc.integer({ min: 0, max: 8 }),
          leaseTtlMs: fc.constantFrom(300, 1000, 2000),
        }),
        async (workload) => {
          const run = await runWorkload(workload);
          // Actual costs above a reservation are debt: not a flow, it only delays later admissions.
          expect(worstWindowExcess(run.flows, workload.burst, workload.ratePerSec)).toBeLessThanOrEqual(1e-9);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
