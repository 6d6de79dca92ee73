/**
 * The dashboard's figures put together from rows, the same way from either
 * database (sqlite/dashboard-reads.ts, postgres/dashboard-reads.ts): totals,
 * pages of lists, and chart series with a point for every day and hour. Pure.
 */
import { addDays, calendarDay, HOUR_MS, monthStartOf, utcHour } from '../domain/calendar.js';
import type { DayPoint, HourPoint, Page, PeriodTotals, RequestRow, TopRow } from './dashboard-reads.js';
import { encodeRequestCursor } from './request-cursor.js';
import type { SpendReport, SpendTotals } from './spend-reads.js';

/** Days of the long chart. */
export const CHART_DAYS = 90;
/** Hours of the short chart. */
const CHART_HOURS = 48;

/** Nothing spent (days and keys without rollup rows). */
export const ZERO_TOTALS: SpendTotals = Object.freeze({
  requests: 0,
  promptTokens: 0,
  cachedTokens: 0,
  completionTokens: 0,
  reasoningTokens: 0,
  costMicros: 0,
  errors: 0,
  rejectedRateLimit: 0,
  rejectedBudget: 0,
});

/** A page of ledger rows from `limit + 1` read: the extra one says more follow. */
export function requestPage(rows: RequestRow[], limit: number, keyId: string, list: 'requests' | '429'): Page<RequestRow> {
  const hasMore = rows.length > limit;
  if (hasMore) rows.length = limit;
  const last = rows[rows.length - 1];
  return { rows, hasMore, nextCursor: hasMore && last !== undefined ? encodeRequestCursor({ keyId, list }, last) : null };
}

/** A page of a key's end users or tags from its spend report. */
export function topPage(report: SpendReport): Page<TopRow> {
  const rows = report.rows.map((row) => ({
    name: row.group,
    totals: pickTotals(row),
    ...(row.firstAt === undefined || row.lastAt === undefined ? {} : { firstAt: Number(row.firstAt), lastAt: Number(row.lastAt) }),
  }));
  return { rows, hasMore: report.hasMore, nextCursor: report.nextCursor };
}

export function addTotals(a: SpendTotals, b: SpendTotals): SpendTotals {
  return {
    requests: a.requests + b.requests,
    promptTokens: a.promptTokens + b.promptTokens,
    cachedTokens: a.cachedTokens + b.cachedTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    costMicros: a.costMicros + b.costMicros,
    errors: a.errors + b.errors,
    rejectedRateLimit: a.rejectedRateLimit + b.rejectedRateLimit,
    rejectedBudget: a.rejectedBudget + b.rejectedBudget,
  };
}

/** Only the SpendTotals fields (rows carry a group name or key id too). */
export function pickTotals(row: SpendTotals): SpendTotals {
  return addTotals(ZERO_TOTALS, row);
}

export function withPending(totals: SpendTotals, pending: number): PeriodTotals {
  return { ...pickTotals(totals), pending };
}

export function byKey(report: SpendReport): Map<string, SpendTotals> {
  const map = new Map<string, SpendTotals>();
  for (const row of report.rows) if (row.keyId !== undefined) map.set(row.keyId, pickTotals(row));
  return map;
}

/** The first and last hour of the hourly chart. */
export function chartHours(now: number): { first: number; last: number } {
  const last = utcHour(now);
  return { first: last - (CHART_HOURS - 1) * HOUR_MS, last };
}

/** Every hour from `first` to `last`, zero where `rows` has none. */
export function hoursFrom(first: number, last: number, rows: readonly HourPoint[]): HourPoint[] {
  const byHour = new Map(rows.map((row) => [row.hour, row]));
  const points: HourPoint[] = [];
  for (let hour = first; hour <= last; hour += HOUR_MS) {
    points.push(byHour.get(hour) ?? { hour, requests: 0, promptTokens: 0, completionTokens: 0, costMicros: 0, rejectedRateLimit: 0, rejectedBudget: 0 });
  }
  return points;
}

/** The {@link CHART_DAYS} days up to `today`, oldest first, zero where `totals` has none. */
export function daysUntil(today: string, totals: ReadonlyMap<string, SpendTotals>): DayPoint[] {
  const points: DayPoint[] = [];
  for (let i = CHART_DAYS - 1; i >= 0; i -= 1) {
    const day = addDays(today, -i);
    points.push({ day, totals: totals.get(day) ?? ZERO_TOTALS });
  }
  return points;
}

/** Today, the start of the month and of the charts, for labels. */
export function periodDays(now: number): { today: string; monthStart: string; chartStartDay: string; chartStartHour: number } {
  const today = calendarDay(now);
  return {
    today,
    monthStart: monthStartOf(today),
    chartStartDay: addDays(today, -(CHART_DAYS - 1)),
    chartStartHour: utcHour(now) - (CHART_HOURS - 1) * HOUR_MS,
  };
}
