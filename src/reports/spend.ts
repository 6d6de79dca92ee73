/** Reading the days a report or export starts and ends from what people type. */
import { addDays, calendarDay, isCalendarDay, monthStartOf } from '../domain/calendar.js';

/**
 * Turns `--since` text into a UTC day: `7d` (the last 7 days, today
 * included), `today`, `month` (the 1st of this month), or `YYYY-MM-DD`.
 */
export function parseSince(text: string, now = Date.now()): string {
  const trimmed = text.trim();
  const days = /^(\d+)d$/.exec(trimmed);
  if (days) {
    const n = Number(days[1]);
    if (n < 1) throw new RangeError('--since Nd needs N ≥ 1');
    return addDays(calendarDay(now), -(n - 1));
  }
  if (trimmed === 'today') return calendarDay(now);
  if (trimmed === 'month') return monthStartOf(calendarDay(now));
  if (isCalendarDay(trimmed)) return trimmed;
  throw new RangeError(`"${text}" is not a start day (use 7d, today, month or YYYY-MM-DD)`);
}
