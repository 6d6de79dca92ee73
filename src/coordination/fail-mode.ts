/**
 * The lease store's `local` fail mode: when Redis cannot be reached and a
 * lease cannot cover a request, each bucket falls back to an in-memory bucket
 * holding a safe share of the limit — `rate/N`, `burst/N` with N the nodes
 * last seen on that bucket — so N nodes together stay near the limit. Still
 * all-or-none across the request's buckets (algorithm/all-or-none.ts). No
 * I/O: it changes only the leases and the table it is given.
 *
 * The share starts empty (a degraded mode hands out no fresh burst) and what
 * a node admits from it is counted on its lease (`fallbackSpent`): when Redis
 * answers again that amount is charged to Redis as debt, up to `burst/N` per
 * node. So admissions made while Redis was merely slow, or before it
 * restarted with an empty (full) bucket, are paid back, and a long outage
 * costs at most one burst of waiting afterwards.
 */
import { takeAllOrNone, type TakeRefusal, type TakeSlot } from '../limits/algorithm/all-or-none.js';
import type { BucketLease } from '../limits/algorithm/lease.js';
import type { LocalBucket, LocalBucketTable } from '../limits/local-store.js';

/** What to do when Redis cannot be reached and a request needs more than its lease. */
export const FAIL_MODES = ['local', 'open', 'closed'] as const;
export type FailMode = (typeof FAIL_MODES)[number];

export type LocalShareDecision =
  /** Taken: per demand the fallback bucket it was taken from, or null for the lease. */
  | { readonly ok: true; readonly fallbacks: (LocalBucket | null)[] }
  | { readonly ok: false; readonly index: number; readonly retryAfterMs: number; readonly reason: 'rate_limited' | 'unavailable' };

/** A demand paid from the safe share: what it admits is also counted on the lease, to charge Redis later. */
class ShareSlot implements TakeSlot {
  constructor(
    private readonly bucket: LocalBucket,
    private readonly lease: BucketLease,
  ) {}

  available(now: number): number {
    return this.bucket.available(now);
  }

  waitMs(cost: number): number {
    return this.bucket.waitMs(cost);
  }

  take(cost: number, now: number): void {
    this.bucket.take(cost, now);
    this.lease.fallbackSpent += cost;
  }
}

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
  const slots: TakeSlot[] = [];
  const fallbacks: (LocalBucket | null)[] = [];
  for (let i = 0; i < leases.length; i++) {
    const lease = leases[i]!;
    const cost = costs[i]!;
    if (lease.spendable(now) >= cost) {
      slots.push(lease);
      fallbacks.push(null);
      continue;
    }
    const divisor = Math.max(1, lease.active);
    if (Math.floor(lease.ref.burst / divisor) < Math.max(1, cost)) {
      return { ok: false, index: i, retryAfterMs: unavailableRetryMs, reason: 'unavailable' };
    }
    const bucket = table.resolve(lease.ref, now, divisor, true);
    slots.push(new ShareSlot(bucket, lease));
    fallbacks.push(bucket);
  }
  // Only share slots can be short, and a share always knows its wait: a refusal names one.
  const refusal: TakeRefusal = { index: -1, waitMs: 0 };
  if (!takeAllOrNone(slots, costs, slots.length, now, refusal)) {
    return { ok: false, index: refusal.index, retryAfterMs: refusal.waitMs, reason: 'rate_limited' };
  }
  return { ok: true, fallbacks };
}
