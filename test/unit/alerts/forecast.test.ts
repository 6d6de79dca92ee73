/** The burn-rate forecast (src/alerts/forecast.ts): exact, by properties over integer micro-USD. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forecastRunOut } from '../../../src/alerts/forecast.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-22T10:00:00Z');
const micros = fc.integer({ min: 0, max: 10_000_000_000_000 });

describe('forecastRunOut', () => {
  it('runs out at the first millisecond where spent + rate × t reaches the budget', () => {
    fc.assert(
      fc.property(micros, micros, fc.integer({ min: 1, max: 10_000_000_000 }), fc.integer({ min: 1, max: 7 * DAY }), (spent, limit, windowSpend, windowMs) => {
        fc.pre(limit > spent);
        // Within the forecast's horizon of a century (further out is reported as a century).
        fc.pre(BigInt(limit - spent) * BigInt(windowMs) < 100n * 365n * BigInt(DAY) * BigInt(windowSpend));
        const f = forecastRunOut({ spentMicros: spent, limitMicros: limit, windowSpendMicros: windowSpend, windowMs, now: NOW, periodEndsAt: undefined });
        expect(f.runsOutAt).not.toBeNull();
        const t = BigInt(f.runsOutAt! - NOW);
        // spent + windowSpend·t/windowMs ≥ limit at t, and not one millisecond earlier (exact, in BigInt).
        const reached = (ms: bigint) => BigInt(spent) * BigInt(windowMs) + BigInt(windowSpend) * ms >= BigInt(limit) * BigInt(windowMs);
        expect(reached(t)).toBe(true);
        expect(reached(t - 1n)).toBe(false);
        expect(f.beforePeriodEnd).toBe(true); // a lifetime budget never resets
      }),
    );
  });

  it('says a budget already used up runs out now, and one with no recent spend never does', () => {
    fc.assert(
      fc.property(micros, micros, micros, (spent, limit, windowSpend) => {
        const f = forecastRunOut({ spentMicros: spent, limitMicros: limit, windowSpendMicros: windowSpend, windowMs: DAY, now: NOW, periodEndsAt: NOW + DAY });
        if (spent >= limit) expect(f.runsOutAt).toBe(NOW);
        else if (windowSpend === 0) expect(f).toEqual({ ratePerDayMicros: 0, runsOutAt: null, beforePeriodEnd: null, period: undefined });
        else expect(f.runsOutAt!).toBeGreaterThan(NOW);
      }),
    );
  });

  it('runs out no later when more was spent or the rate is higher', () => {
    fc.assert(
      fc.property(micros, micros, fc.integer({ min: 1, max: 1e10 }), fc.nat(1e9), fc.nat(1e9), (spent, limit, windowSpend, moreSpent, moreRate) => {
        fc.pre(limit > spent + moreSpent);
        const base = { limitMicros: limit, windowMs: DAY, now: NOW, periodEndsAt: NOW + DAY };
        const a = forecastRunOut({ ...base, spentMicros: spent, windowSpendMicros: windowSpend });
        const b = forecastRunOut({ ...base, spentMicros: spent + moreSpent, windowSpendMicros: windowSpend + moreRate });
        expect(b.runsOutAt!).toBeLessThanOrEqual(a.runsOutAt!);
      }),
    );
  });

  it('compares the run-out time with the end of the period', () => {
    // $10 of $50 spent, $20 in the last day: $40 left lasts 2 days.
    const base = { spentMicros: 10_000_000, limitMicros: 50_000_000, windowSpendMicros: 20_000_000, windowMs: DAY, now: NOW };
    expect(forecastRunOut({ ...base, periodEndsAt: NOW + 3 * DAY })).toEqual({
      ratePerDayMicros: 20_000_000,
      runsOutAt: NOW + 2 * DAY,
      beforePeriodEnd: true,
      period: undefined,
    });
    expect(forecastRunOut({ ...base, periodEndsAt: NOW + 2 * DAY }).beforePeriodEnd).toBe(false);
    expect(forecastRunOut({ ...base, windowMs: DAY / 2, periodEndsAt: undefined }).ratePerDayMicros).toBe(40_000_000);
  });
});
