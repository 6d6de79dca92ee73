/**
 * What one ledger row, in its current state, adds to the rollups — the same
 * amounts the writer adds step by step (sqlite/ledger-writer.ts): a pending row its
 * estimate, a settled one its actual usage, a refused one its refusal
 * counter. The shipper moves PostgreSQL's rollups by the difference between
 * a row's new state and the state PostgreSQL already had, so a row shipped
 * twice (or its pending state after its settlement) moves nothing.
 *
 * Pure: no I/O.
 */
import type { RejectionReason } from './ledger.js';
import { subtractCounters, ZERO_COUNTERS, type Counters } from './rollup-spec.js';

/** The ledger columns that decide a row's rollup amounts (names as in the tables). */
export interface LedgerState {
  readonly status: string;
  readonly created_at: number;
  readonly est_prompt_tokens: number;
  readonly est_completion_tokens: number;
  readonly est_cost_micros: number;
  readonly prompt_tokens: number | null;
  readonly cached_tokens: number | null;
  readonly completion_tokens: number | null;
  readonly reasoning_tokens: number | null;
  readonly cost_micros: number | null;
  readonly error_code: string | null;
}

/** A row's amounts, one per counter (src/storage/rollup-spec.ts). */
export type RowCounts = Counters;

/** The reason a refusal was filed under follows from its error code (src/pipeline/refusals.ts). */
export function rejectionReason(errorCode: string | null): RejectionReason {
  if (errorCode === 'rate_limit_exceeded') return 'rate_limit';
  if (errorCode === 'insufficient_quota') return 'budget';
  return 'other';
}

/** A row's whole contribution to every rollup row it is filed under. */
export function countsOf(row: LedgerState): RowCounts {
  if (row.status === 'pending') {
    return { ...ZERO_COUNTERS, requests: 1, promptTokens: row.est_prompt_tokens, completionTokens: row.est_completion_tokens, costMicros: row.est_cost_micros };
  }
  if (row.status === 'rejected' || row.status === 'invalid_request') {
    const reason = rejectionReason(row.error_code);
    return {
      ...ZERO_COUNTERS,
      rejectedRateLimit: reason === 'rate_limit' ? 1 : 0,
      rejectedBudget: reason === 'budget' ? 1 : 0,
      errors: reason === 'other' ? 1 : 0,
    };
  }
  return {
    ...ZERO_COUNTERS,
    requests: 1,
    promptTokens: row.prompt_tokens ?? 0,
    cachedTokens: row.cached_tokens ?? 0,
    completionTokens: row.completion_tokens ?? 0,
    reasoningTokens: row.reasoning_tokens ?? 0,
    costMicros: row.cost_micros ?? 0,
    errors: row.status === 'ok' ? 0 : 1,
  };
}

/**
 * What shipping `next` does to a row PostgreSQL holds as `held`: insert it
 * (no row yet), settle it (held pending, next settled), or nothing — a row
 * settles once, and a stale pending state never overwrites a settlement.
 */
export function transition(held: LedgerState | undefined, next: LedgerState): 'insert' | 'settle' | 'none' {
  if (held === undefined) return 'insert';
  if (held.status === 'pending' && next.status !== 'pending') return 'settle';
  return 'none';
}

/** next − held, counter by counter (held absent = zero). */
export function countsDelta(held: LedgerState | undefined, next: LedgerState): RowCounts {
  const a = held === undefined ? ZERO_COUNTERS : countsOf(held);
  return subtractCounters(countsOf(next), a);
}
