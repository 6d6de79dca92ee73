/** The spend-velocity check (src/alerts/velocity.ts) against the rational definition. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { trailingAverage, velocityExceeded } from '../../../src/alerts/velocity.js';

const micros = fc.integer({ min: 0, max: 1_000_000_000_000 });
const factor = fc.integer({ min: 100, max: 100_000 }).map((hundredths) => hundredths / 100);

describe('velocityExceeded', () => {
  it('is true exactly when the hour is at least the minimum and over k × the trailing average', () => {
    fc.assert(
      fc.property(micros, micros, fc.integer({ min: 1, max: 168 }), factor, fc.nat(10_000_000), (lastHour, trailing, hours, k, minimum) => {
        // The same in exact rationals: lastHour > k · trailing / hours.
        expect(velocityExceeded({ lastHourMicros: lastHour, trailingMicros: trailing, trailingHours: hours, factor: k, minimumMicros: minimum })).toBe(
          BigInt(lastHour) >= BigInt(minimum) && lastHour > 0 && BigInt(lastHour) * BigInt(hours) * 100n > BigInt(Math.round(k * 100)) * BigInt(trailing),
        );
      }),
    );
  });

  it('never fires at or below k × the average, and is monotonic in the last hour', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 48 }), factor, fc.nat(1_000_000), (average, hours, k, extra) => {
        const trailing = average * hours;
        const atK = Math.floor(k * average);
        const input = { trailingMicros: trailing, trailingHours: hours, factor: k, minimumMicros: 0 };
        expect(velocityExceeded({ ...input, lastHourMicros: atK })).toBe(false);
        if (velocityExceeded({ ...input, lastHourMicros: atK + 1 })) expect(velocityExceeded({ ...input, lastHourMicros: atK + 1 + extra })).toBe(true);
      }),
    );
  });

  it('fires for a runaway hour after quiet ones, not for a steady rate, not under the minimum', () => {
    const base = { trailingHours: 24, factor: 3, minimumMicros: 1_000_000 };
    // 24 h at $0.50/h, then $5 in one hour: 10× the average.
    expect(velocityExceeded({ ...base, trailingMicros: 12_000_000, lastHourMicros: 5_000_000 })).toBe(true);
    expect(velocityExceeded({ ...base, trailingMicros: 12_000_000, lastHourMicros: 1_500_000 })).toBe(false); // exactly 3×
    expect(velocityExceeded({ ...base, trailingMicros: 12_000_000, lastHourMicros: 1_500_001 })).toBe(true);
    // No history: any hour over the minimum is a runaway; under it, nothing.
    expect(velocityExceeded({ ...base, trailingMicros: 0, lastHourMicros: 999_999 })).toBe(false);
    expect(velocityExceeded({ ...base, trailingMicros: 0, lastHourMicros: 1_000_000 })).toBe(true);
    expect(trailingAverage({ trailingMicros: 12_000_000, trailingHours: 24 })).toBe(500_000);
  });
});
