/**
 * A session's spend, read from its own ledger rows (sessions have no rollup:
 * a session is one agent's run, minutes to hours and at most thousands of
 * rows, which `ledger_key_session` finds without scanning the key's). The
 * same sum the rollups would hold (row-counts.ts): a pending row at its
 * reservation, a settled one at its cost, a refusal at nothing. Pure.
 */
import { dayEndMs, dayStartMs } from '../domain/calendar.js';
import type { SpendRead } from './ledger.js';

/** What one ledger row (alias `l`) adds to spend, as SQL both databases run. */
export const ROW_SPEND_SQL = `CASE WHEN l.status = 'pending' THEN l.est_cost_micros ELSE coalesce(l.cost_micros, 0) END`;

/** The `created_at` range [from, to) of a budget read's days ('total' starts at '0000-00-00': from the first row). */
export function sessionReadRange(read: SpendRead): { from: number; to: number } {
  return { from: read.since < '0001-01-01' ? 0 : dayStartMs(read.since), to: dayEndMs(read.until) };
}
