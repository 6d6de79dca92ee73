/**
 * Calendar arithmetic: the days, hours, weeks and months the ledger's
 * rollups, budgets and reports are filed under. Pure apart from one
 * process-wide setting, the deployment's time zone ({@link setTimeZone},
 * `TOLLGATE_TIMEZONE`, UTC by default): a budget's "day" is a calendar day
 * there. Days are `YYYY-MM-DD` strings (they sort and compare as text);
 * hours are the epoch ms of their first instant.
 */

export const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** A budget's period: a calendar day, an ISO week (Monday first), a calendar month, or all time. */
export const BUDGET_PERIODS = ['day', 'week', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** Local date parts of a timestamp in the configured zone, or null for UTC. */
let zone: Intl.DateTimeFormat | null = null;

/**
 * Sets the time zone calendar days are counted in (an IANA name such as
 * `Europe/Berlin`). Throws RangeError for a name the runtime does not know.
 * Days already filed keep their dates: change it only on a fresh ledger.
 */
export function setTimeZone(name: string): void {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: name,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const resolved = format.resolvedOptions().timeZone;
  zone = resolved === 'UTC' || resolved === 'Etc/UTC' ? null : format;
  dayStart = 0;
  dayEnd = 0;
  for (const known of Object.values(periodEnds)) known.day = '';
}

/** The zone calendar days are counted in (a worker thread sets the same: src/storage/sqlite/read-worker.ts). */
export function currentTimeZone(): string {
  return zone?.resolvedOptions().timeZone ?? 'UTC';
}

/** Milliseconds the zone is ahead of UTC at `ms`. */
function offsetAt(ms: number): number {
  if (zone === null) return 0;
  const parts: Record<string, number> = {};
  for (const part of zone.formatToParts(ms)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return local - (ms - (((ms % 1000) + 1000) % 1000));
}

/** Epoch ms at which a calendar day begins in the configured zone. */
export function dayStartMs(day: string): number {
  const utc = Date.parse(`${day}T00:00:00Z`);
  if (zone === null) return utc;
  // The offset at local midnight, found from a first guess (exact unless midnight itself is skipped by DST).
  const guess = utc - offsetAt(utc);
  return utc - offsetAt(guess);
}

/** Epoch ms at which a calendar day ends (the next one begins). */
export function dayEndMs(day: string): number {
  return dayStartMs(addDays(day, 1));
}

let dayStart = 0;
let dayEnd = 0;
let dayText = '1970-01-01';

/** Calendar day of a timestamp in the configured zone, YYYY-MM-DD (the current day is remembered: no date math per row). */
export function calendarDay(ms: number): string {
  if (ms >= dayStart && ms < dayEnd) return dayText;
  const text = new Date(ms + offsetAt(ms)).toISOString().slice(0, 10);
  dayStart = dayStartMs(text);
  dayEnd = dayEndMs(text);
  dayText = text;
  return text;
}

/** Start of the UTC hour containing `ms`. */
export function utcHour(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

/** `day` moved by `days` (negative goes back). */
export function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** The first day of `day`'s month, YYYY-MM-01. */
export function monthStartOf(day: string): string {
  return `${day.slice(0, 7)}-01`;
}

/** The Monday of `day`'s ISO week. */
function weekStartOf(day: string): string {
  const weekday = new Date(`${day}T00:00:00Z`).getUTCDay(); // 0 = Sunday
  return addDays(day, -((weekday + 6) % 7));
}

/** True for a real calendar day written YYYY-MM-DD (2026-02-30 is not). */
export function isCalendarDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === text;
}

/** First day of the budget period containing `now` ('0000-00-00' for total). */
export function periodStart(period: BudgetPeriod, now: number): string {
  const today = calendarDay(now);
  if (period === 'day') return today;
  if (period === 'week') return weekStartOf(today);
  return period === 'month' ? monthStartOf(today) : '0000-00-00';
}

/**
 * The end of each period as last computed, by the day it was computed for: every admission asks
 * for its budgets' period ends, and the date math behind one (`toISOString`, `Date.parse`) cost
 * about 15,000 instructions a request (docs/performance.md, "Values bound in column order").
 */
const periodEnds: Record<Exclude<BudgetPeriod, 'total'>, { day: string; end: number }> = {
  day: { day: '', end: 0 },
  week: { day: '', end: 0 },
  month: { day: '', end: 0 },
};

/** When the budget period containing `now` ends (ms), or undefined for total. */
export function periodEnd(period: BudgetPeriod, now: number): number | undefined {
  if (period === 'total') return undefined;
  const today = calendarDay(now);
  const known = periodEnds[period];
  if (known.day !== today) {
    const start = periodStart(period, now);
    known.end = period === 'day' ? dayEndMs(start) : period === 'week' ? dayStartMs(addDays(start, 7)) : dayStartMs(monthStartOf(addDays(start, 31)));
    known.day = today;
  }
  return known.end;
}

/** A stable name for the budget period containing `now`: the day, `W` and the week's Monday, the month, or "total". */
export function periodId(period: BudgetPeriod, now: number): string {
  if (period === 'total') return 'total';
  const start = periodStart(period, now);
  return period === 'day' ? start : period === 'week' ? `W${start}` : start.slice(0, 7);
}
