/**
 * The Redis store's `local` fail mode: when Redis cannot be reached and a
 * lease cannot cover a request, each bucket falls back to an in-memory bucket
 * holding a safe share of the limit — `rate/N`, `burst/N` with N the nodes
 * last seen on that bucket — so N nodes together stay near the limit. Still
 * all-or-none across the request's buckets. Pure apart from the table it is
 * given.
 *
 * The share starts empty (a degraded mode hands out no fresh burst) and what
 * a node admits from it is counted on its lease (`fallbackSpent`): when Redis
 * answers again that amount is charged to Redis as debt, up to `burst/N` per
 * node. So admissions made while Redis was merely slow, or before it
 * restarted with an empty (full) bucket, are paid back, and a long outage
 * costs at most one burst of waiting afterwards.
 */
import type { BucketLease } from '../algorithm/lease.js';
import type { LocalBucket, LocalBucketTable } from './local-store.js';
import { computeRetryAfterMs, refillBucket, type BucketState } from '../algorithm/token-bucket.js';

/** What to do when Redis cannot be reached and a request needs more than its lease. */
export type FailMode = 'local' | 'open' | 'closed';

export type LocalShareDecision =
  /** Taken: per demand the fallback bucket it was taken from, or null for the lease. */
  | { readonly ok: true; readonly fallbacks: (LocalBucket | null)[] }
  | { readonly ok: false; readonly index: number; readonly retryAfterMs: number; readonly reason: 'rate_limited' | 'unavailable' };

const peek: BucketState = { tokens: 0, carry: 0, ts: 0 };

/**
 * Takes each cost from its lease where the lease suffices, else from the
 * safe-share bucket — from all or from none. A cost above a share's capacity
 * is `unavailable` (it cannot fit until Redis is back).
 */
export function takeLocalShare(
  leases: readonly BucketLease[],
  costs: readonly number[],
  table: LocalBucketTable,
  now: number,
  unavailableRetryMs: number,
): LocalShareDecision {
  const fallbacks: (LocalBucket | null)[] = [];
  let worst = 0;
  let worstIndex = -1;
  for (let i = 0; i < leases.length; i++) {
    const lease = leases[i]!;
    const cost = costs[i]!;
    if (lease.spendable(now) >= cost) {
      fallbacks.push(null);
      continue;
    }
    const divisor = Math.max(1, lease.active);
    if (Math.floor(lease.ref.burst / divisor) < Math.max(1, cost)) {
      return { ok: false, index: i, retryAfterMs: unavailableRetryMs, reason: 'unavailable' };
    }
    const bucket = table.resolve(lease.ref, now, divisor, true);
    refillBucket(bucket.shape, bucket.state, now, peek);
    if (peek.tokens < cost) {
      const wait = computeRetryAfterMs(bucket.shape, peek, cost);
      if (wait > worst) {
        worst = wait;
        worstIndex = i;
      }
    }
    fallbacks.push(bucket);
  }
  if (worstIndex >= 0) return { ok: false, index: worstIndex, retryAfterMs: worst, reason: 'rate_limited' };
  for (let i = 0; i < leases.length; i++) {
    const bucket = fallbacks[i];
    if (bucket) {
      refillBucket(bucket.shape, bucket.state, now, bucket.state);
      bucket.state.tokens -= costs[i]!;
      bucket.lastUsed = now;
      leases[i]!.fallbackSpent += costs[i]!;
    } else {
      leases[i]!.trySpend(costs[i]!, now);
    }
  }
  return { ok: true, fallbacks };
}
