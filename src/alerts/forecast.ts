/**
 * The burn-rate forecast: at the rate of a recent window (the last 24 hours),
 * when does a budget run out — before its period ends, or not. Pure: the
 * clock and the spend are arguments. Money is integer micro-USD; the division
 * is done in BigInt so a large budget over a long window stays exact.
 */

const DAY_MS = 86_400_000;
/** Forecasts further out than this are this far out (a date in a century says "not soon" as well). */
const HORIZON_MS = 100n * 365n * BigInt(DAY_MS);

export interface ForecastInput {
  /** Spent in the budget's period so far. */
  readonly spentMicros: number;
  /** The budget. */
  readonly limitMicros: number;
  /** Spent in the rate window (e.g. the last 24 hours). */
  readonly windowSpendMicros: number;
  /** Length of the rate window, ms (≥ 1). */
  readonly windowMs: number;
  readonly now: number;
  /** When the period ends (ms), undefined for a lifetime budget. */
  readonly periodEndsAt: number | undefined;
}

export interface Forecast {
  /** The window's rate, micro-USD per day (rounded down). */
  readonly ratePerDayMicros: number;
  /** When the budget runs out at that rate (ms); `now` when it already has; null when nothing was spent in the window. */
  readonly runsOutAt: number | null;
  /** True when it runs out before the period ends (a lifetime budget: whenever it runs out); null when it never does. */
  readonly beforePeriodEnd: boolean | null;
}

/** When `limitMicros` is used up at the window's rate. */
export function forecastRunOut(input: ForecastInput): Forecast {
  const windowMs = Math.max(1, Math.floor(input.windowMs));
  const windowSpend = Math.max(0, input.windowSpendMicros);
  const ratePerDayMicros = Number((BigInt(windowSpend) * BigInt(DAY_MS)) / BigInt(windowMs));
  const remaining = input.limitMicros - input.spentMicros;
  let runsOutAt: number | null;
  if (remaining <= 0) runsOutAt = input.now;
  else if (windowSpend === 0) runsOutAt = null;
  // The first instant at which spent + rate·t ≥ limit: ceil(remaining · window / windowSpend).
  else {
    const delay = (BigInt(remaining) * BigInt(windowMs) + BigInt(windowSpend) - 1n) / BigInt(windowSpend);
    runsOutAt = input.now + Number(delay < HORIZON_MS ? delay : HORIZON_MS);
  }
  const beforePeriodEnd = runsOutAt === null ? null : input.periodEndsAt === undefined ? true : runsOutAt < input.periodEndsAt;
  return { ratePerDayMicros, runsOutAt, beforePeriodEnd };
}

/** "2026-11-28 14:05 UTC": minutes are the forecast's precision. */
function forecastTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** One sentence for people: the alert, the dashboard and `tollgate spend` say the same. */
export function describeForecast(forecast: Forecast, formatUsd: (micros: number) => string, now: number): string {
  const rate = `${formatUsd(forecast.ratePerDayMicros)}/day`;
  if (forecast.runsOutAt === null) return 'no spend in the last 24 h: not running out';
  if (forecast.runsOutAt <= now) return `used up (last 24 h: ${rate})`;
  const when = forecastTime(forecast.runsOutAt);
  return forecast.beforePeriodEnd === true
    ? `at the last 24 h's rate (${rate}) runs out ${when}, before the period ends`
    : `at the last 24 h's rate (${rate}) lasts the period (would run out ${when})`;
}
