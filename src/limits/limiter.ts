/**
 * The one limiter API the proxy's request path uses. Two stores implement it:
 * {@link ./local-store.ts} (one process, in memory) and the lease store,
 * src/coordination/lease-store.ts (many processes, escrow leases on Redis or
 * on the primary of `serve --workers N`).
 *
 * A request's demands are paid all-or-none (`acquire`), then settled once
 * against the actual cost (`settle`): unused reservation is refunded, an
 * underestimate becomes debt that later requests wait out.
 */
import type { LimitUnit } from '../domain/policy.js';

/**
 * One bucket: a limit at one level (key, tenant or global). Get them from
 * `bindingsForPolicy` (algorithm/bindings.ts), which builds them once per
 * policy, so the request path does not build strings.
 */
export interface BucketRef {
  /** Unique per bucket, conventionally `<hashTag>:<limitName>`; the in-memory map key. */
  readonly id: string;
  /**
   * Redis Cluster hash tag: every bucket of one key (or tenant, or the global
   * level) shares it so they live in one slot. The Redis key is
   * `tg:{<hashTag>}:<limitName>`, so (hashTag, limitName) must be unique too.
   */
  readonly hashTag: string;
  /** The limit's name, shown in headers and 429s. */
  readonly limitName: string;
  /** Refill rate in bucket units per second (> 0). */
  readonly ratePerSec: number;
  /** Capacity in bucket units (≥ 1; fractional part ignored). */
  readonly burst: number;
  /** An unseen bucket starts empty instead of full. */
  readonly startEmpty?: boolean;
  /** What a unit is, for the `RateLimit-Policy` header; `requests` when absent. */
  readonly unit?: LimitUnit;
}

/** What one request asks from one bucket. */
export interface Demand {
  readonly bucket: BucketRef;
  /** Integer bucket units (requests, tokens × weight, micro-USD); fractions are rounded up. */
  readonly cost: number;
}

/** A bucket's state as the client may see it (RateLimit headers). */
export interface BucketSnapshot {
  readonly bucket: BucketRef;
  /** Whole units left after this decision (≥ 0). With Redis: the node's best estimate. */
  readonly remaining: number;
  /** Capacity in whole units. */
  readonly burst: number;
  readonly ratePerSec: number;
  /** Milliseconds until the bucket would be full again. */
  readonly resetMs: number;
}

/** Proof of an admitted request; pass it to `settle` exactly once (extra calls are no-ops). */
export interface Ticket {
  /** Reserved cost per demand, in the order the demands were given. */
  readonly costs: readonly number[];
  /** True once settled. */
  readonly settled: boolean;
}

/** Why a request was refused. */
export type RefusalReason =
  /** A bucket lacks tokens now; retry after `retryAfterMs` → 429 `rate_limit_exceeded`. */
  | 'rate_limited'
  /** The cost exceeds the bucket's burst: no wait helps → a 400-class error. */
  | 'never_fits'
  /** Redis is unreachable and the fail mode is `closed` (or the safe local share is too small). */
  | 'unavailable';

export type AcquireResult =
  | { readonly ok: true; readonly ticket: Ticket; readonly states: readonly BucketSnapshot[] }
  | {
      readonly ok: false;
      /** Milliseconds until the request could fit (0 for `never_fits`). */
      readonly retryAfterMs: number;
      /** The bucket that refused (the one with the longest wait). */
      readonly refusedBy: BucketRef;
      readonly states: readonly BucketSnapshot[];
      readonly reason: RefusalReason;
    };

/**
 * Hooks for logs and metrics; the integrator wires them to pino/prom-client.
 * Called synchronously on the request path: keep them cheap, never throw.
 */
export interface LimiterObserver {
  /** One Redis script call finished (`op` is `lease`), with its latency and outcome. */
  redisCall?(op: string, ms: number, ok: boolean): void;
  /** A lease call for `bucketId` granted `granted` units (0 = Redis had none). */
  leaseTopUp?(bucketId: string, granted: number): void;
  /** The fail mode was entered (Redis unreachable: `reason` says why) or left. */
  failMode?(entered: boolean, reason: string): void;
  /** A decision per limit: every limit of an admitted request, the refusing limit of a refused one. */
  decision?(limitName: string, allowed: boolean): void;
}

/** A rate limiter over many buckets. */
export interface Limiter {
  /**
   * Takes each demand's cost from its bucket — from every bucket or from none.
   * Never rejects for expected outcomes: a refusal is `{ ok: false }`. Throws
   * only on programming errors (negative/NaN cost, the same bucket twice, use
   * after `close`).
   */
  acquire(demands: readonly Demand[]): Promise<AcquireResult>;
  /**
   * Settles a ticket with the actual cost per demand (same order as acquired):
   * less than reserved → the difference is refunded; more → the excess is
   * charged as debt. Once per ticket; later calls are ignored. Synchronous and
   * I/O-free (the lease store reports on its next tick).
   */
  settle(ticket: Ticket, actualCosts: readonly number[]): void;
  /**
   * The bucket as this process sees it, without taking anything (dashboards,
   * the bucket-level gauge). Local: the bucket itself (an unseen bucket is
   * full, or empty if it starts empty). Redis: what this node may spend now
   * from its lease — the cluster's balance lives in Redis.
   */
  peek(bucket: BucketRef): BucketSnapshot;
  /** Stops timers and hands leases back (Redis). Idempotent. */
  close(): Promise<void>;
}

/**
 * Normalizes a demand's cost: integers pass, fractions round up (a weighted
 * cost never under-charges), and anything negative or not finite is a bug.
 */
export function normalizeCost(cost: number, bucket: BucketRef): number {
  if (!(cost >= 0 && cost < Number.POSITIVE_INFINITY)) throw createCostError(cost, bucket);
  return Number.isInteger(cost) ? cost : Math.ceil(cost);
}

/** Throws when a bucket id appears twice in one request (its costs would be checked separately). */
export function assertDistinctBuckets(demands: readonly Demand[]): void {
  for (let i = 1; i < demands.length; i++) {
    const id = demands[i]!.bucket.id;
    for (let j = 0; j < i; j++) {
      if (demands[j]!.bucket.id === id) throw createDuplicateBucketError(id);
    }
  }
}

// The errors are built apart from the checks so the checks stay small
// enough for V8 to inline into the decision path.
function createCostError(cost: number, bucket: BucketRef): RangeError {
  return new RangeError(`cost for bucket "${bucket.id}" must be a finite number ≥ 0 (got ${cost})`);
}

/** The error for a bucket that appears twice in one acquire. */
export function createDuplicateBucketError(id: string): RangeError {
  return new RangeError(`bucket "${id}" appears twice in one acquire`);
}
