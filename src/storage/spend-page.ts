/**
 * The paging both spend-report implementations share (sqlite/spend-reads.ts,
 * postgres/spend-reads.ts): a report's day range and position from its
 * cursor, the sort values each row carries, and counter arithmetic. Pure.
 */
import { calendarDay } from '../domain/calendar.js';
import { decodeSpendCursor, type CursorScope, type SpendPosition } from './spend-cursor.js';
import type { SpendQuery, SpendRow, SpendTotals } from './spend-reads.js';

/** A grouped row with its sort values (stripped before it is returned). */
export type SortedRow = SpendRow & { readonly _name: string; readonly _id: string };

/** The row without its sort values, and where a page after it starts. */
export function splitSortValues(row: SortedRow): { row: SpendRow; position: SpendPosition } {
  const { _name, _id, ...rest } = row;
  return { row: rest, position: { after: { cost: Number(row.costMicros), name: _name, id: _id } } };
}

/** The totals' counters, for sums and differences in code. */
export const SPEND_COUNTERS = [
  'requests',
  'promptTokens',
  'cachedTokens',
  'completionTokens',
  'reasoningTokens',
  'costMicros',
  'errors',
  'rejectedRateLimit',
  'rejectedBudget',
] as const;

/** The day range and page a query reads: `until` from the cursor when it has one, else the query's or today. */
export function pageOf(query: SpendQuery, now: number): { until: string; position: SpendPosition | undefined; scope: CursorScope } {
  const scope = { by: query.by, since: query.since, keyId: query.keyId, tenantId: query.tenantId };
  if (query.cursor === undefined) {
    const until = query.until ?? calendarDay(now);
    return { until, position: undefined, scope: { ...scope, until } };
  }
  const { position, until } = decodeSpendCursor(query.cursor, { ...scope, until: query.until });
  return { until, position, scope: { ...scope, until } };
}

/** `total` less the sum of `rows`, counter by counter. */
export function difference(total: SpendTotals, rows: readonly SpendTotals[]): SpendTotals {
  const rest = { ...total } as Record<(typeof SPEND_COUNTERS)[number], number>;
  for (const row of rows) for (const counter of SPEND_COUNTERS) rest[counter] -= row[counter];
  return rest;
}
