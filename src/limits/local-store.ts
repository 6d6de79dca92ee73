/**
 * In-memory limiter: one token bucket per key·limit in this process. Used on
 * its own (no Redis) and by the lease store (src/coordination/lease-store.ts)
 * as its `local` fail-mode fallback.
 *
 * A decision resolves each demand's bucket with one `Map.get`, then takes
 * all-or-none across key, tenant and global levels (algorithm/all-or-none.ts):
 * each bucket peeks its refilled balance into its own preallocated state and
 * commits it only if every bucket fits — no allocation until the result
 * object is built.
 */
import { performance } from 'node:perf_hooks';
import { takeAllOrNone, type TakeRefusal, type TakeSlot } from './algorithm/all-or-none.js';
import {
  createDuplicateBucketError,
  normalizeCost,
  type AcquireResult,
  type BucketRef,
  type BucketSnapshot,
  type Demand,
  type Limiter,
  type LimiterObserver,
  type Ticket,
} from './limiter.js';
import {
  chargeTokens,
  computeMsUntilFull,
  computeRetryAfterMs,
  createBucketShape,
  createBucketState,
  isBucketFull,
  refillBucket,
  refundTokens,
  NEVER_FITS,
  type BucketShape,
  type BucketState,
} from './algorithm/token-bucket.js';

/** One bucket held in memory; a slot of the all-or-none take. */
export class LocalBucket implements TakeSlot {
  /** Set when dropped from the table; a ticket holding it resolves the bucket again. */
  evicted = false;
  // The balance refilled to the decision's time: read by `waitMs` and
  // committed by `take`, so a refusal writes nothing. One per bucket, so a
  // decision allocates nothing.
  private readonly peeked: BucketState = { tokens: 0, carry: 0, ts: 0 };

  constructor(
    public ref: BucketRef,
    public shape: BucketShape,
    readonly state: BucketState,
    /** Rate and burst are divided by this (the Redis fail-mode share); 1 otherwise. */
    public divisor: number,
    public lastUsed: number,
  ) {}

  available(now: number): number {
    refillBucket(this.shape, this.state, now, this.peeked);
    return this.peeked.tokens;
  }

  waitMs(cost: number): number {
    return computeRetryAfterMs(this.shape, this.peeked, cost);
  }

  take(cost: number, now: number): void {
    this.state.tokens = this.peeked.tokens - cost;
    this.state.carry = this.peeked.carry;
    this.state.ts = this.peeked.ts;
    this.lastUsed = now;
  }
}

/**
 * The map of buckets, with exact idle eviction. A bucket is dropped only when
 * it has been idle and, refilled, is full — recreating it full then loses
 * nothing. Buckets in debt or partly drained stay until they are full again.
 * A `startEmpty` bucket would come back *empty*, so its id is remembered in a
 * bounded tombstone set and it comes back full; if that set overflows, the
 * oldest tombstones go and those buckets restart empty (stricter, never looser).
 */
export class LocalBucketTable {
  private readonly buckets = new Map<string, LocalBucket>();
  private readonly tombstones = new Set<string>();

  constructor(private readonly maxTombstones = 100_000) {}

  /** Number of buckets held. */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * The bucket for `ref`, created on first use (empty if `ref.startEmpty`, or
   * if `createEmpty`); reshaped if its rate, burst or divisor changed.
   */
  resolve(ref: BucketRef, now: number, divisor = 1, createEmpty = false): LocalBucket {
    const bucket = this.buckets.get(ref.id);
    if (bucket === undefined) return this.create(ref, now, divisor, createEmpty);
    if (bucket.ref !== ref || bucket.divisor !== divisor) reshapeBucket(bucket, ref, divisor, now);
    return bucket;
  }

  // Apart from `resolve` so the lookup that every decision runs stays small
  // enough for V8 to inline.
  private create(ref: BucketRef, now: number, divisor: number, createEmpty: boolean): LocalBucket {
    const shape = createBucketShape(ref.ratePerSec / divisor, ref.burst / divisor);
    const startEmpty = createEmpty || (ref.startEmpty === true && !this.tombstones.delete(ref.id));
    const bucket = new LocalBucket(ref, shape, createBucketState(shape, now, startEmpty), divisor, now);
    this.buckets.set(ref.id, bucket);
    return bucket;
  }

  /** Drops buckets idle for `idleMs` that are full at `now`; returns how many went. */
  evictIdle(now: number, idleMs: number): number {
    let dropped = 0;
    for (const [id, bucket] of this.buckets) {
      if (now - bucket.lastUsed < idleMs || !isBucketFull(bucket.shape, bucket.state, now)) continue;
      this.buckets.delete(id);
      bucket.evicted = true;
      dropped++;
      if (bucket.ref.startEmpty === true) {
        this.tombstones.add(id);
        if (this.tombstones.size > this.maxTombstones) {
          const oldest = this.tombstones.values().next();
          if (oldest.done !== true) this.tombstones.delete(oldest.value);
        }
      }
    }
    return dropped;
  }

  /** The bucket for `id` if held (no creation, no reshaping). */
  get(id: string): LocalBucket | undefined {
    return this.buckets.get(id);
  }

  /** Forgets every bucket (the lease store drops its fallback when Redis is back). */
  clear(): void {
    for (const bucket of this.buckets.values()) bucket.evicted = true;
    this.buckets.clear();
  }
}

function reshapeBucket(bucket: LocalBucket, ref: BucketRef, divisor: number, now: number): void {
  const old = bucket.shape;
  bucket.ref = ref;
  const ratePerSec = ref.ratePerSec / divisor;
  if (old.ratePerSec === ratePerSec && old.capacity === Math.floor(ref.burst / divisor)) {
    bucket.divisor = divisor;
    return;
  }
  refillBucket(old, bucket.state, now, bucket.state);
  const shape = createBucketShape(ratePerSec, ref.burst / divisor);
  // The carry is a fraction of old.rateDen; rescale it, rounding down (never invent credit).
  bucket.state.carry = Math.floor((bucket.state.carry * shape.rateDen) / old.rateDen);
  if (bucket.state.tokens > shape.capacity) {
    bucket.state.tokens = shape.capacity;
    bucket.state.carry = 0;
  }
  bucket.shape = shape;
  bucket.divisor = divisor;
}

/** Options of {@link LocalLimiter}. */
export interface LocalLimiterOptions {
  /** Monotonic clock in ms; defaults to `performance.now`. Tests inject a virtual one. */
  readonly now?: () => number;
  /** Drop buckets untouched for this long (and full). Default 60 000 ms. */
  readonly idleMs?: number;
  /** How many evicted start-empty buckets to remember. Default 100 000. */
  readonly maxTombstones?: number;
  /** Decision hook for metrics. */
  readonly observer?: LimiterObserver;
}

class LocalTicket implements Ticket {
  settled = false;
  constructor(
    readonly owner: LocalLimiter,
    readonly buckets: LocalBucket[],
    readonly costs: number[],
  ) {}
}

/** Single-process limiter over in-memory buckets. */
export class LocalLimiter implements Limiter {
  private readonly table: LocalBucketTable;
  private readonly clock: () => number;
  private readonly idleMs: number;
  private readonly observer: LimiterObserver | undefined;
  private lastSweep: number;
  private closed = false;
  // Reused across decisions so the hot path allocates nothing of its own.
  private readonly resolved: LocalBucket[] = [];
  private readonly costs: number[] = [];
  /** Which bucket refused the last refused decision, and its wait. */
  private readonly refusal: TakeRefusal = { index: 0, waitMs: 0 };

  constructor(options: LocalLimiterOptions = {}) {
    this.clock = options.now ?? (() => performance.now());
    this.idleMs = options.idleMs ?? 60_000;
    this.table = new LocalBucketTable(options.maxTombstones);
    this.observer = options.observer;
    this.lastSweep = this.clock();
  }

  /** Buckets currently held in memory. */
  get size(): number {
    return this.table.size;
  }

  async acquire(demands: readonly Demand[]): Promise<AcquireResult> {
    return this.acquireNow(demands);
  }

  /** {@link acquire} without the promise: the local store never waits. */
  acquireNow(demands: readonly Demand[]): AcquireResult {
    const now = this.clock();
    const outcome = this.takeAll(demands, now);
    if (outcome === 0) {
      const ticket = new LocalTicket(this, this.resolved.slice(0, demands.length), this.costs.slice(0, demands.length));
      if (this.observer?.decision) for (const demand of demands) this.observer.decision(demand.bucket.limitName, true);
      return { ok: true, ticket, states: this.snapshot(ticket.buckets, now) };
    }
    const refusedBy = demands[this.refusal.index]!.bucket;
    this.observer?.decision?.(refusedBy.limitName, false);
    const never = outcome === NEVER_FITS;
    return {
      ok: false,
      retryAfterMs: never ? 0 : outcome,
      refusedBy,
      states: this.snapshot(this.resolved.slice(0, demands.length), now),
      reason: never ? 'never_fits' : 'rate_limited',
    };
  }

  /**
   * The decision itself, allocation-free: 0 when every demand was taken,
   * otherwise the longest retry-after in ms ({@link NEVER_FITS} if a cost
   * exceeds its burst) and nothing was taken.
   */
  takeAll(demands: readonly Demand[], now: number = this.clock()): number {
    if (this.closed) throw new Error('limiter is closed');
    if (now - this.lastSweep >= this.idleMs) this.sweep(now);
    const { table, resolved, costs, refusal } = this;
    const n = demands.length;
    for (let i = 0; i < n; i++) {
      const demand = demands[i]!;
      const bucket = table.resolve(demand.bucket, now);
      // One id is one bucket object: comparing objects is cheaper than comparing ids.
      for (let j = 0; j < i; j++) if (resolved[j] === bucket) throw createDuplicateBucketError(demand.bucket.id);
      resolved[i] = bucket;
      costs[i] = normalizeCost(demand.cost, demand.bucket);
    }
    // A short bucket always knows its wait (≥ 1 ms), so a refusal names one.
    return takeAllOrNone(resolved, costs, n, now, refusal) ? 0 : refusal.waitMs;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    this.table.evictIdle(now, this.idleMs);
  }

  settle(ticket: Ticket, actualCosts: readonly number[]): void {
    if (!(ticket instanceof LocalTicket) || ticket.owner !== this) {
      throw new TypeError('ticket was not issued by this limiter');
    }
    if (ticket.settled) return;
    if (actualCosts.length !== ticket.costs.length) {
      throw new RangeError(`settle needs ${ticket.costs.length} actual costs, got ${actualCosts.length}`);
    }
    ticket.settled = true;
    const now = this.clock();
    for (let i = 0; i < ticket.buckets.length; i++) {
      let bucket = ticket.buckets[i]!;
      const diff = ticket.costs[i]! - normalizeCost(actualCosts[i]!, bucket.ref);
      if (diff === 0) continue;
      // An evicted bucket was full; a refund to it is lost anyway, but debt must land.
      if (bucket.evicted) bucket = this.table.resolve(bucket.ref, now);
      if (diff > 0) refundTokens(bucket.shape, bucket.state, diff, now);
      else chargeTokens(bucket.shape, bucket.state, -diff, now);
      bucket.lastUsed = now;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  peek(ref: BucketRef): BucketSnapshot {
    const bucket = this.table.get(ref.id);
    if (bucket !== undefined) return this.snapshot([bucket], this.clock())[0]!;
    const burst = Math.floor(ref.burst);
    const remaining = ref.startEmpty === true ? 0 : burst;
    return { bucket: ref, remaining, burst, ratePerSec: ref.ratePerSec, resetMs: Math.ceil(((burst - remaining) / ref.ratePerSec) * 1000) };
  }

  private snapshot(buckets: readonly LocalBucket[], now: number): BucketSnapshot[] {
    const states: BucketSnapshot[] = [];
    const peek: BucketState = { tokens: 0, carry: 0, ts: 0 };
    for (const bucket of buckets) {
      refillBucket(bucket.shape, bucket.state, now, peek);
      states.push({
        bucket: bucket.ref,
        remaining: Math.max(0, peek.tokens),
        burst: bucket.shape.capacity,
        ratePerSec: bucket.shape.ratePerSec,
        resetMs: computeMsUntilFull(bucket.shape, peek),
      });
    }
    return states;
  }
}

/** Creates the in-memory limiter (the default when no Redis is configured). */
export function createLocalLimiter(options: LocalLimiterOptions = {}): LocalLimiter {
  return new LocalLimiter(options);
}
