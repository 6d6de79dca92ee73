/** The forecast's sentence (src/alerts/forecast.ts): it speaks in the budget's period and never dates a run-out after the reset. */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { describeForecast, forecastRunOut } from '../../../src/alerts/forecast.js';
import { BUDGET_PERIODS, periodEnd, setTimeZone, type BudgetPeriod } from '../../../src/domain/calendar.js';
import { formatMicrosExact } from '../../../src/domain/money.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
// Sunday 22 November 2026, 10:00 UTC: the day ends in 14 h, the week in 14 h, the month in 8 days 14 h.
const NOW = Date.parse('2026-11-22T10:00:00Z');

/** The sentence for a $10 budget with `spent` spent and `perDay` spent in the last 24 h. */
function sentence(period: BudgetPeriod, spent: number, perDay: number, now = NOW): string {
  const forecast = forecastRunOut({
    spentMicros: spent,
    limitMicros: 10_000_000,
    windowSpendMicros: perDay,
    windowMs: DAY,
    now,
    periodEndsAt: periodEnd(period, now),
    period,
  });
  return describeForecast(forecast, formatMicrosExact, now);
}

afterEach(() => setTimeZone('UTC'));

describe('describeForecast', () => {
  it("gives a daily budget that runs out today the time of day, and one that outlasts the day 'lasts the day'", () => {
    // $6 left at $24/day: 6 h, 16:00.
    expect(sentence('day', 4_000_000, 24_000_000)).toBe("at the last 24 h's rate ($24.00/day), today's budget lasts until 16:00 UTC");
    // $6 left at $8/day: 18 h, past midnight.
    expect(sentence('day', 4_000_000, 8_000_000)).toBe("at the last 24 h's rate ($8.00/day), today's budget lasts the day");
  });

  it("writes the time of day in the deployment's time zone", () => {
    setTimeZone('Europe/Berlin');
    // 16:00 UTC is 17:00 in Berlin in November; the Berlin day ends at 23:00 UTC.
    expect(sentence('day', 4_000_000, 24_000_000)).toBe("at the last 24 h's rate ($24.00/day), today's budget lasts until 17:00 Europe/Berlin");
    expect(sentence('day', 4_000_000, 10_000_000)).toBe("at the last 24 h's rate ($10.00/day), today's budget lasts the day");
  });

  it('gives a weekly or monthly budget the date within its period, or says it lasts the week or month', () => {
    const tuesday = Date.parse('2026-11-17T10:00:00Z');
    // $9 left at $4/day: 2.25 days, Thursday 16:00.
    expect(sentence('week', 1_000_000, 4_000_000, tuesday)).toBe("at the last 24 h's rate ($4.00/day), this week's budget lasts until 2026-11-19 16:00 UTC");
    expect(sentence('week', 1_000_000, 1_000_000, tuesday)).toBe("at the last 24 h's rate ($1.00/day), this week's budget lasts the week");
    expect(sentence('month', 1_000_000, 4_000_000)).toBe("at the last 24 h's rate ($4.00/day), this month's budget lasts until 2026-11-24 16:00 UTC");
    // $9 left at $0.01/day would last 900 days — the month resets long before, and no year is named.
    expect(sentence('month', 1_000_000, 10_000)).toBe("at the last 24 h's rate ($0.01/day), this month's budget lasts the month");
  });

  it('treats a run-out exactly at the reset as lasting the period', () => {
    // $7 left at $12/day: exactly 14 h, midnight, when the day's budget resets.
    expect(sentence('day', 3_000_000, 12_000_000)).toBe("at the last 24 h's rate ($12.00/day), today's budget lasts the day");
  });

  it('says a budget with no spend in the last 24 h lasts its period', () => {
    expect(sentence('day', 4_000_000, 0)).toBe("no spend in the last 24 h: today's budget lasts the day");
    expect(sentence('week', 4_000_000, 0)).toBe("no spend in the last 24 h: this week's budget lasts the week");
    expect(sentence('month', 4_000_000, 0)).toBe("no spend in the last 24 h: this month's budget lasts the month");
    expect(sentence('total', 4_000_000, 0)).toBe('no spend in the last 24 h: not running out');
  });

  it('says a budget already spent is used up, whatever the rate', () => {
    expect(sentence('day', 10_000_000, 0)).toBe("today's budget is used up (last 24 h: $0.00/day)");
    expect(sentence('month', 12_000_000, 5_000_000)).toBe("this month's budget is used up (last 24 h: $5.00/day)");
    expect(sentence('total', 10_000_000, 1_000_000)).toBe('the budget is used up (last 24 h: $1.00/day)');
  });

  it('dates a lifetime budget that runs out within a year, and says one beyond lasts over a year', () => {
    expect(sentence('total', 4_000_000, 2_000_000)).toBe("at the last 24 h's rate ($2.00/day) runs out 2026-11-25 10:00 UTC");
    expect(sentence('total', 4_000_000, 1)).toBe("at the last 24 h's rate ($0.000001/day) lasts over a year");
  });

  it('keeps the period-free wording for a forecast made without a period', () => {
    const forecast = forecastRunOut({
      spentMicros: 0,
      limitMicros: 10_000_000,
      windowSpendMicros: 1_000_000,
      windowMs: DAY,
      now: NOW,
      periodEndsAt: NOW + HOUR,
    });
    expect(describeForecast(forecast, formatMicrosExact, NOW)).toBe("at the last 24 h's rate ($1.00/day), the budget lasts the period");
  });

  it('never names a date after the period ends, for any period, spend and rate', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...BUDGET_PERIODS.filter((period) => period !== 'total')),
        fc.integer({ min: 0, max: 20_000_000 }),
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 40 * DAY }),
        (period, spent, perDay, offset) => {
          const now = NOW + offset;
          const end = periodEnd(period, now)!;
          const forecast = forecastRunOut({
            spentMicros: spent,
            limitMicros: 10_000_000,
            windowSpendMicros: perDay,
            windowMs: DAY,
            now,
            periodEndsAt: end,
            period,
          });
          const text = describeForecast(forecast, formatMicrosExact, now);
          const dates = [...text.matchAll(/(\d{4}-\d\d-\d\d) (\d\d:\d\d)/g)].map((m) => Date.parse(`${m[1]}T${m[2]}:00Z`));
          for (const date of dates) expect(date).toBeLessThan(end);
          if (period === 'day') expect(dates).toEqual([]);
          if (forecast.beforePeriodEnd === false) expect(text).toMatch(/lasts the (day|week|month)$/);
        },
      ),
    );
  });
});
