/**
 * A session's spend, read from its own ledger rows (sessions have no rollup:
 * a session is one agent's run, minutes to hours and at most thousands of
 * rows, which `ledger_key_session` finds without scanning the key's). The
 * same sum the rollups would hold (row-counts.ts): a pending row at its
 * reservation, a settled one at its cost, a refusal at nothing. Reports by
 * session read the period's rows the same way ({@link sessionRowsSql}). Pure.
 */
import { dayEndMs, dayStartMs } from '../domain/calendar.js';
import type { SpendRead } from './ledger.js';

/** What one ledger row (alias `l`) adds to spend, as SQL both databases run. */
export const ROW_SPEND_SQL = `CASE WHEN l.status = 'pending' THEN l.est_cost_micros ELSE coalesce(l.cost_micros, 0) END`;

/** The `created_at` range [from, to) of a budget read's days ('total' starts at '0000-00-00': from the first row). */
export function sessionReadRange(read: SpendRead): { from: number; to: number } {
  return { from: read.since < '0001-01-01' ? 0 : dayStartMs(read.since), to: dayEndMs(read.until) };
}

const REFUSED = `l.status IN ('rejected', 'invalid_request')`;

/**
 * A session report's rows, shaped like a rollup's (`r.key_id`, `r.session`,
 * `r.day`, the counters' columns, and `r.created_at` for a session's first
 * and last request): the ledger rows with a session created in [fromMs,
 * toMs), each counted as row-counts.ts counts it. `day` is `dayExpr` (the
 * report's first day: the range is already applied), so the reports'
 * day filters hold. The times are numbers computed by the caller, never
 * client text.
 */
export function sessionRowsSql(dayExpr: string, fromMs: number, toMs: number): string {
  const pending = `l.status = 'pending'`;
  const settled = (column: string) => `CASE WHEN ${pending} OR ${REFUSED} THEN 0 ELSE coalesce(l.${column}, 0) END`;
  const estimated = (column: string) => `CASE WHEN ${pending} THEN l.est_${column} WHEN ${REFUSED} THEN 0 ELSE coalesce(l.${column}, 0) END`;
  return `(SELECT l.key_id, l.session, ${dayExpr} AS day, l.created_at,
    CASE WHEN ${REFUSED} THEN 0 ELSE 1 END AS requests,
    ${estimated('prompt_tokens')} AS prompt_tokens, ${settled('cached_tokens')} AS cached_tokens,
    ${estimated('completion_tokens')} AS completion_tokens, ${settled('reasoning_tokens')} AS reasoning_tokens,
    ${ROW_SPEND_SQL} AS cost_micros,
    CASE WHEN ${pending} THEN 0 WHEN ${REFUSED} THEN (CASE WHEN l.error_code IN ('rate_limit_exceeded', 'insufficient_quota') THEN 0 ELSE 1 END)
      WHEN l.status = 'ok' THEN 0 ELSE 1 END AS errors,
    CASE WHEN ${REFUSED} AND l.error_code = 'rate_limit_exceeded' THEN 1 ELSE 0 END AS rejected_rate_limit,
    CASE WHEN ${REFUSED} AND l.error_code = 'insufficient_quota' THEN 1 ELSE 0 END AS rejected_budget
   FROM ledger AS l WHERE l.session IS NOT NULL AND l.created_at >= ${Math.floor(fromMs)} AND l.created_at < ${Math.floor(toMs)})`;
}
