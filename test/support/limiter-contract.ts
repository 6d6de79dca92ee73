/**
 * One contract for every Limiter implementation (local, Redis, Redis Cluster)
 * so they cannot drift apart. Rates are tiny (per hour) so refill during a
 * test is negligible and counts are exact.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { BucketRef, Limiter } from '../../src/limits/limiter.js';

export interface ContractSetup {
  /** A fresh limiter; the contract closes it after each test. */
  create(): Promise<Limiter>;
}

const HOUR = 3_600_000;

function bucket(name: string, burst: number, over: Partial<BucketRef> = {}): BucketRef {
  const hashTag = `key:${randomUUID()}`;
  return { id: `${hashTag}:${name}`, hashTag, limitName: name, ratePerSec: burst / 3600, burst, ...over };
}

export function describeLimiterContract(name: string, setup: ContractSetup): void {
  describe(`${name} limiter contract`, () => {
    const open: Limiter[] = [];
    const create = async () => {
      const limiter = await setup.create();
      open.push(limiter);
      return limiter;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((l) => l.close()));
    });

    it('admits up to the burst, then refuses with the time one more unit takes', async () => {
      const limiter = await create();
      const rpm = bucket('rpm', 10);
      for (let i = 0; i < 10; i++) expect((await limiter.acquire([{ bucket: rpm, cost: 1 }])).ok).toBe(true);
      const refused = await limiter.acquire([{ bucket: rpm, cost: 1 }]);
      expect(refused.ok).toBe(false);
      if (refused.ok) return;
      expect(refused.reason).toBe('rate_limited');
      expect(refused.refusedBy).toBe(rpm);
      // 10 per hour: one unit every 360 s.
      expect(refused.retryAfterMs).toBeGreaterThan(0.9 * (HOUR / 10));
      expect(refused.retryAfterMs).toBeLessThanOrEqual(HOUR / 10 + 1000);
    });

    it('takes from every bucket or from none', async () => {
      const limiter = await create();
      const key = bucket('key', 5);
      const tenant = bucket('tenant', 2);
      expect(
        (
          await limiter.acquire([
            { bucket: key, cost: 1 },
            { bucket: tenant, cost: 1 },
          ])
        ).ok,
      ).toBe(true);
      expect(
        (
          await limiter.acquire([
            { bucket: key, cost: 1 },
            { bucket: tenant, cost: 1 },
          ])
        ).ok,
      ).toBe(true);
      const refused = await limiter.acquire([
        { bucket: key, cost: 1 },
        { bucket: tenant, cost: 1 },
      ]);
      expect(refused.ok).toBe(false);
      if (!refused.ok) expect(refused.refusedBy).toBe(tenant);
      // The key bucket lost nothing to the refused request: 3 of 5 remain.
      for (let i = 0; i < 3; i++) expect((await limiter.acquire([{ bucket: key, cost: 1 }])).ok).toBe(true);
      expect((await limiter.acquire([{ bucket: key, cost: 1 }])).ok).toBe(false);
    });

    it('says never_fits when a cost exceeds the burst, and takes nothing', async () => {
      const limiter = await create();
      const tpm = bucket('tpm', 100, { unit: 'tokens' });
      const other = bucket('rpm', 10);
      const result = await limiter.acquire([
        { bucket: other, cost: 1 },
        { bucket: tpm, cost: 101 },
      ]);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.reason).toBe('never_fits');
        expect(result.refusedBy).toBe(tpm);
      }
      expect((await limiter.acquire([{ bucket: other, cost: 10 }])).ok).toBe(true);
    });

    it('takes weighted costs', async () => {
      const limiter = await create();
      const tpm = bucket('tpm', 1000, { unit: 'tokens' });
      expect((await limiter.acquire([{ bucket: tpm, cost: 600 }])).ok).toBe(true);
      expect((await limiter.acquire([{ bucket: tpm, cost: 401 }])).ok).toBe(false);
      expect((await limiter.acquire([{ bucket: tpm, cost: 400 }])).ok).toBe(true);
    });

    it('rounds a fractional cost up and admits a zero cost freely', async () => {
      const limiter = await create();
      const b = bucket('b', 3);
      expect((await limiter.acquire([{ bucket: b, cost: 2.1 }])).ok).toBe(true);
      expect((await limiter.acquire([{ bucket: b, cost: 0.5 }])).ok).toBe(false);
      expect((await limiter.acquire([{ bucket: b, cost: 0 }])).ok).toBe(true);
    });

    it('refunds the unused part of a reservation on settle', async () => {
      const limiter = await create();
      const tpm = bucket('tpm', 1000, { unit: 'tokens' });
      const first = await limiter.acquire([{ bucket: tpm, cost: 800 }]);
      if (!first.ok) throw new Error('expected admission');
      limiter.settle(first.ticket, [300]);
      expect((await limiter.acquire([{ bucket: tpm, cost: 700 }])).ok).toBe(true);
      expect((await limiter.acquire([{ bucket: tpm, cost: 1 }])).ok).toBe(false);
    });

    it('charges an underestimate as debt that later requests wait out', async () => {
      const limiter = await create();
      const tpm = bucket('tpm', 1000, { unit: 'tokens' });
      const first = await limiter.acquire([{ bucket: tpm, cost: 500 }]);
      if (!first.ok) throw new Error('expected admission');
      limiter.settle(first.ticket, [1500]);
      const refused = await limiter.acquire([{ bucket: tpm, cost: 1 }]);
      expect(refused.ok).toBe(false);
      if (refused.ok) return;
      expect(refused.reason).toBe('rate_limited');
      // 1000 − 500 − 1000 = −500: 501 units at 1000/hour, about half an hour.
      expect(refused.retryAfterMs).toBeGreaterThan(0.45 * HOUR);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(0.51 * HOUR);
    });

    it('settles a ticket once; later settles change nothing', async () => {
      const limiter = await create();
      const b = bucket('b', 10);
      const first = await limiter.acquire([{ bucket: b, cost: 5 }]);
      if (!first.ok) throw new Error('expected admission');
      limiter.settle(first.ticket, [0]);
      limiter.settle(first.ticket, [0]);
      expect(first.ticket.settled).toBe(true);
      expect((await limiter.acquire([{ bucket: b, cost: 10 }])).ok).toBe(true);
      expect((await limiter.acquire([{ bucket: b, cost: 1 }])).ok).toBe(false);
    });

    it('rejects programming errors loudly', async () => {
      const limiter = await create();
      const b = bucket('b', 10);
      await expect(limiter.acquire([{ bucket: b, cost: -1 }])).rejects.toThrow(RangeError);
      await expect(limiter.acquire([{ bucket: b, cost: Number.NaN }])).rejects.toThrow(RangeError);
      await expect(
        limiter.acquire([
          { bucket: b, cost: 1 },
          { bucket: b, cost: 1 },
        ]),
      ).rejects.toThrow(RangeError);
      const first = await limiter.acquire([{ bucket: b, cost: 1 }]);
      if (!first.ok) throw new Error('expected admission');
      expect(() => limiter.settle(first.ticket, [1, 1])).toThrow(RangeError);
      expect(() => limiter.settle({ costs: [1], settled: false }, [1])).toThrow(TypeError);
    });

    it('reports each bucket for the RateLimit headers', async () => {
      const limiter = await create();
      const b = bucket('b', 10);
      await limiter.acquire([{ bucket: b, cost: 3 }]);
      const result = await limiter.acquire([{ bucket: b, cost: 2 }]);
      expect(result.states).toHaveLength(1);
      const [state] = result.states;
      expect(state?.bucket).toBe(b);
      expect(state?.burst).toBe(10);
      expect(state?.ratePerSec).toBeCloseTo(10 / 3600, 12);
      expect(state?.remaining).toBe(5);
      // 5 missing units at 10/hour.
      expect(state?.resetMs).toBeGreaterThan(0.45 * HOUR);
      expect(state?.resetMs).toBeLessThanOrEqual(0.5 * HOUR + 1000);
    });

    it('starts a start-empty bucket empty', async () => {
      const limiter = await create();
      const b = bucket('b', 10, { startEmpty: true });
      const result = await limiter.acquire([{ bucket: b, cost: 1 }]);
      expect(result.ok).toBe(false);
    });

    it('never admits more than the burst to concurrent requests', async () => {
      const limiter = await create();
      const b = bucket('b', 20);
      const results = await Promise.all(Array.from({ length: 60 }, () => limiter.acquire([{ bucket: b, cost: 1 }])));
      const first = results.filter((r) => r.ok).length;
      expect(first).toBeLessThanOrEqual(20);
      // Whatever a busy moment left unclaimed is still there afterwards.
      let more = 0;
      for (let i = 0; i < 25; i++) if ((await limiter.acquire([{ bucket: b, cost: 1 }])).ok) more++;
      expect(first + more).toBe(20);
    });

    it('refuses use after close', async () => {
      const limiter = await create();
      await limiter.close();
      await expect(limiter.acquire([{ bucket: bucket('b', 1), cost: 1 }])).rejects.toThrow(/closed/);
    });
  });
}
