/**
 * The primary of `serve --workers N` keeps budget counters with a TypeScript
 * transcription of lua/budget.lua (src/coordination/budget-script-model.ts): on
 * random sequences of reservations and adjustments it agrees with the script
 * on a real redis-server, reply for reply and counter for counter.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adjustBudgetModel, runBudgetModel, type BudgetCounterMap } from '../../../src/coordination/budget-script-model.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';

const SCRIPT = readFileSync(new URL('../../../lua/budget.lua', import.meta.url), 'utf8');
let server: RedisHandle;
let redis: Redis;
let runs = 0;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

type Step = { kind: 'reserve'; amount: number; seed: number; least: number; ttl: number } | { kind: 'adjust'; delta: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc
    .record({
      amount: fc.integer({ min: 0, max: 3000 }),
      seed: fc.integer({ min: -1, max: 2000 }),
      leastShare: fc.double({ min: 0, max: 1, noNaN: true }),
      ttl: fc.constantFrom(0, 3_600_000),
    })
    .map(({ amount, seed, leastShare, ttl }): Step => ({ kind: 'reserve', amount, seed, least: Math.floor(amount * leastShare), ttl })),
  fc.integer({ min: -1500, max: 1500 }).map((delta): Step => ({ kind: 'adjust', delta })),
);

it('agrees with lua/budget.lua on real Redis', async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 5000 }), fc.array(step, { minLength: 1, maxLength: 30 }), async (cap, steps) => {
      const key = `tg:{key:model-${runs++}}:budget:2026-11-22`;
      const model: BudgetCounterMap = new Map();
      const now = 1_000_000;
      for (const s of steps) {
        if (s.kind === 'reserve') {
          const real = ((await redis.eval(SCRIPT, 1, key, cap, s.amount, s.seed, s.ttl, s.least)) as number[]).map(Number);
          expect(runBudgetModel(model, key, cap, s.amount, s.seed, s.ttl, s.least, now)).toEqual(real);
        } else {
          const real = await redis.incrby(key, s.delta);
          expect(adjustBudgetModel(model, key, s.delta, now)).toBe(real);
        }
        const stored = await redis.get(key);
        expect(model.get(key)?.spent ?? null).toBe(stored === null ? null : Number(stored));
      }
    }),
    { numRuns: 100 },
  );
});
