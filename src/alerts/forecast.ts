/**
 * The burn-rate forecast: at the rate of a recent window (the last 24 hours),
 * when does a budget run out — before its period ends, or not. Pure: the
 * clock and the spend are arguments (times are written in the deployment's
 * time zone, src/domain/calendar.ts). Money is integer micro-USD; the division
 * is done in BigInt so a large budget over a long window stays exact.
 */
import { currentTimeZone, type BudgetPeriod } from '../domain/calendar.js';

const DAY_MS = 86_400_000;
/** Forecasts further out than this are this far out (a date in a century says "not soon" as well). */
const HORIZON_MS = 100n * 365n * BigInt(DAY_MS);
/** A lifetime budget that lasts longer than this "lasts over a year": a date decades away means nothing. */
const YEAR_MS = 365 * DAY_MS;

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
  /** The budget's period, so the sentence speaks of today, this week or this month; unset: "the period". */
  readonly period?: BudgetPeriod;
}

export interface Forecast {
  /** The window's rate, micro-USD per day (rounded down). */
  readonly ratePerDayMicros: number;
  /** When the budget runs out at that rate (ms); `now` when it already has; null when nothing was spent in the window. */
  readonly runsOutAt: number | null;
  /** True when it runs out before the period ends (a lifetime budget: whenever it runs out); null when it never does. */
  readonly beforePeriodEnd: boolean | null;
  /** The budget's period as given, or 'total' for one without an end; undefined when not given. */
  readonly period: BudgetPeriod | undefined;
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
  const period = input.period ?? (input.periodEndsAt === undefined ? 'total' : undefined);
  return { ratePerDayMicros, runsOutAt, beforePeriodEnd, period };
}

let formatter: { zone: string; format: Intl.DateTimeFormat } | null = null;

/** Local date and time parts in the deployment's zone (the formatter is kept while the zone stays). */
function localParts(ms: number): { date: string; time: string; zone: string } {
  const zone = currentTimeZone();
  if (formatter?.zone !== zone) {
    const options: Intl.DateTimeFormatOptions = {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    };
    formatter = { zone, format: new Intl.DateTimeFormat('en-US', options) };
  }
  const parts: Record<string, string> = {};
  for (const part of formatter.format.formatToParts(ms)) parts[part.type] = part.value;
  return { date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}`, zone };
}

/** What the sentence calls the budget. */
const SUBJECT: Record<BudgetPeriod, string> = { day: "today's budget", week: "this week's budget", month: "this month's budget", total: 'the budget' };
/** What a budget that outlasts its period lasts. */
const LASTS: Record<BudgetPeriod, string> = { day: 'lasts the day', week: 'lasts the week', month: 'lasts the month', total: 'is not running out' };

/**
 * One sentence for people: the alert, the dashboard and `tollgate spend` say
 * the same. It speaks in the budget's period: a daily budget lasts until a
 * time of day or "lasts the day"; a weekly or monthly one until a date within
 * the period or "lasts the week/month". A run-out after the period ends is
 * never written as a date (the budget resets first). Times are minutes in the
 * deployment's time zone, named.
 */
export function describeForecast(forecast: Forecast, formatUsd: (micros: number) => string, now: number): string {
  const rate = `${formatUsd(forecast.ratePerDayMicros)}/day`;
  const period = forecast.period;
  const subject = period === undefined ? 'the budget' : SUBJECT[period];
  if (forecast.runsOutAt === null) {
    return period === undefined || period === 'total' ? 'no spend in the last 24 h: not running out' : `no spend in the last 24 h: ${subject} ${LASTS[period]}`;
  }
  if (forecast.runsOutAt <= now) return `${subject} is used up (last 24 h: ${rate})`;
  const at = `at the last 24 h's rate (${rate})`;
  const when = localParts(forecast.runsOutAt);
  if (period === 'total') {
    return forecast.runsOutAt - now > YEAR_MS ? `${at} lasts over a year` : `${at} runs out ${when.date} ${when.time} ${when.zone}`;
  }
  if (forecast.beforePeriodEnd !== true) return `${at}, ${subject} ${period === undefined ? 'lasts the period' : LASTS[period]}`;
  // A daily budget runs out today: the time of day says it all.
  const until = period === 'day' ? `${when.time} ${when.zone}` : `${when.date} ${when.time} ${when.zone}`;
  return `${at}, ${subject} lasts until ${until}`;
}
