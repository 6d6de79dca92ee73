/**
 * UTC calendar arithmetic: the days, hours and months the ledger's rollups,
 * budgets and reports are filed under. Pure, no I/O. Days are `YYYY-MM-DD`
 * strings (they sort and compare as text); hours are the epoch ms of their
 * first instant.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** A budget's period: a UTC day, a UTC month, or all time. */
export type BudgetPeriod = 'day' | 'month' | 'total';

let dayStart = 0;
let dayText = '1970-01-01';

/** UTC calendar day of a timestamp, YYYY-MM-DD (the current day is remembered: one Date per day, not per row). */
export function utcDay(ms: number): string {
  if (ms >= dayStart && ms < dayStart + DAY_MS) return dayText;
  const start = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
  const text = new Date(start).toISOString().slice(0, 10);
  dayStart = start;
  dayText = text;
  return text;
}

/** Start of the UTC hour containing `ms`. */
export function utcHour(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

/** The UTC month of a day or timestamp, YYYY-MM. */
function utcMonth(dayOrMs: string | number): string {
  return (typeof dayOrMs === 'number' ? utcDay(dayOrMs) : dayOrMs).slice(0, 7);
}

/** `day` moved by `days` (negative goes back). */
export function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** The first day of `day`'s month, YYYY-MM-01. */
export function monthStartOf(day: string): string {
  return `${day.slice(0, 7)}-01`;
}

/** Epoch ms at which a UTC day begins. */
export function dayStartMs(day: string): number {
  return Date.parse(`${day}T00:00:00Z`);
}

/** True for a real calendar day written YYYY-MM-DD (2026-02-30 is not). */
export function isCalendarDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const ms = dayStartMs(text);
  return !Number.isNaN(ms) && utcDay(ms) === text;
}

/** First UTC day of the budget period containing `now` ('0000-00-00' for total). */
export function periodStart(period: BudgetPeriod, now: number): string {
  const today = utcDay(now);
  return period === 'day' ? today : period === 'month' ? monthStartOf(today) : '0000-00-00';
}

/** When the budget period containing `now` ends (ms), or undefined for total. */
export function periodEnd(period: BudgetPeriod, now: number): number | undefined {
  const date = new Date(now);
  if (period === 'day') return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
  if (period === 'month') return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return undefined;
}

/** A stable name for the budget period containing `now`: the day, the month, or "total". */
export function periodId(period: BudgetPeriod, now: number): string {
  return period === 'day' ? utcDay(now) : period === 'month' ? utcMonth(now) : 'total';
}
