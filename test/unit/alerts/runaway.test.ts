/** The runaway stop's rule (src/alerts/runaway.ts) against the rational definition. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hourlyRate, ruleForKey, runawayVerdict } from '../../../src/alerts/runaway.js';

const HOUR = 3_600_000;
const micros = fc.integer({ min: 0, max: 1_000_000_000_000 });
const durationMs = fc.integer({ min: 1, max: 7 * 24 * HOUR });
const factor = fc.option(
  fc.integer({ min: 100, max: 100_000 }).map((hundredths) => hundredths / 100),
  { nil: undefined },
);
const ceiling = fc.option(fc.integer({ min: 1, max: 1_000_000_000_000 }), { nil: undefined });

describe('runawayVerdict', () => {
  it('is over exactly when the window reached the minimum and its rate beats k × the usual rate or the ceiling', () => {
    fc.assert(
      fc.property(micros, durationMs, micros, durationMs, factor, ceiling, fc.nat(10_000_000), (spent, windowMs, trailing, trailingMs, k, perHour, minimum) => {
        const verdict = runawayVerdict(
          { factor: k, microUsdPerHour: perHour, minimumMicros: minimum },
          { windowMicros: spent, windowMs, trailingMicros: trailing, trailingMs },
        );
        // Exact rationals: spent/windowMs > k · trailing/trailingMs, or spent/windowMs > perHour/HOUR.
        const relative = k !== undefined && BigInt(spent) * BigInt(trailingMs) * 100n > BigInt(Math.round(k * 100)) * BigInt(trailing) * BigInt(windowMs);
        const absolute = perHour !== undefined && BigInt(spent) * BigInt(HOUR) > BigInt(perHour) * BigInt(windowMs);
        expect(verdict.over).toBe(spent > 0 && spent >= minimum && (relative || absolute));
      }),
    );
  });

  it('never throttles without a rule, nor under the minimum', () => {
    fc.assert(
      fc.property(micros, durationMs, micros, durationMs, (spent, windowMs, trailing, trailingMs) => {
        const input = { windowMicros: spent, windowMs, trailingMicros: trailing, trailingMs };
        expect(runawayVerdict({ factor: undefined, microUsdPerHour: undefined, minimumMicros: 0 }, input).over).toBe(false);
        expect(runawayVerdict({ factor: 1, microUsdPerHour: 1, minimumMicros: spent + 1 }, input).over).toBe(false);
      }),
    );
  });

  it('is monotonic: spending more in the same window never releases, a longer history of the same spend never throttles more', () => {
    fc.assert(
      fc.property(
        micros,
        fc.nat(1_000_000_000),
        durationMs,
        micros,
        durationMs,
        factor,
        ceiling,
        (spent, extra, windowMs, trailing, trailingMs, k, perHour) => {
          const rule = { factor: k, microUsdPerHour: perHour, minimumMicros: 0 };
          const base = { windowMicros: spent, windowMs, trailingMicros: trailing, trailingMs };
          if (runawayVerdict(rule, base).over) expect(runawayVerdict(rule, { ...base, windowMicros: spent + extra }).over).toBe(true);
          if (!runawayVerdict(rule, base).over) expect(runawayVerdict(rule, { ...base, trailingMicros: trailing + extra }).over).toBe(false);
        },
      ),
    );
  });

  it('reports rates per hour', () => {
    expect(hourlyRate(1_000_000, 5 * 60_000)).toBe(12_000_000);
    const verdict = runawayVerdict(
      { factor: 8, microUsdPerHour: undefined, minimumMicros: 100_000 },
      { windowMicros: 1_000_000, windowMs: 300_000, trailingMicros: 24_000_000, trailingMs: 24 * HOUR },
    );
    expect(verdict).toEqual({ over: true, microUsdPerHour: 12_000_000, usualMicroUsdPerHour: 1_000_000 });
    // A new key: no history, but its first cents are under the minimum.
    expect(
      runawayVerdict(
        { factor: 8, microUsdPerHour: undefined, minimumMicros: 100_000 },
        { windowMicros: 99_999, windowMs: 300_000, trailingMicros: 0, trailingMs: HOUR },
      ).over,
    ).toBe(false);
  });
});

describe('ruleForKey', () => {
  const configured = { factor: 10, microUsdPerHour: 50_000_000, minimumMicros: 1_000_000, windowMs: 300_000 };

  it("replaces only what the key's own rule names, and `off` leaves nothing to be over", () => {
    expect(ruleForKey(configured, undefined)).toBe(configured);
    expect(ruleForKey(configured, { factor: 40 })).toEqual({ ...configured, factor: 40 });
    expect(ruleForKey(configured, { microUsdPerHour: 5_000_000 })).toEqual({ ...configured, microUsdPerHour: 5_000_000 });
    const off = ruleForKey(configured, { off: true });
    expect(off).toMatchObject({ factor: undefined, microUsdPerHour: undefined, windowMs: 300_000 });
    fc.assert(
      fc.property(micros, durationMs, micros, durationMs, (spent, windowMs, trailing, trailingMs) => {
        expect(runawayVerdict(off, { windowMicros: spent, windowMs, trailingMicros: trailing, trailingMs }).over).toBe(false);
      }),
    );
  });
});
