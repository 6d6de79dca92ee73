/**
 * The lease store: a limiter shared by many proxy processes through escrow
 * leases (docs/leases.md) on buckets kept by `lua/lease.lua` — in Redis, or in
 * the primary of `serve --workers N`, which runs the same script's model
 * (ipc-store.ts, ipc-primary.ts); only the transport differs. Each process
 * holds a lease per hot bucket and admits requests from it with no I/O; below
 * 25% of the lease's target it tops up ahead of need, one call per bucket in
 * flight, all calls of a tick in one batch. A request waits for the bucket's
 * keeper only when its own cost exceeds the lease, and then at most
 * `maxWaitMs` before the fail mode decides.
 *
 * All-or-none across levels: key, tenant and global buckets live in different
 * Redis slots, so no script spans them. Lease calls only move tokens into
 * leases; the all-or-none take (limits/algorithm/all-or-none.ts) runs here
 * over the local leases, so a request is never half-debited — not even when
 * Redis fails mid-request.
 *
 * When Redis is unreachable (timeouts, errors, breaker open) leases keep being
 * spent until they expire; then `failMode` applies (`local`, `open`, `closed`:
 * fail-mode.ts). Reconnection is automatic (ioredis) and the breaker's probe
 * resumes leasing. The bounds of a Redis failover or restart: docs/leases.md.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { takeAllOrNone, type TakeRefusal } from '../limits/algorithm/all-or-none.js';
import { CircuitBreaker } from '../limits/algorithm/circuit-breaker.js';
import { takeLocalShare, type FailMode } from './fail-mode.js';
import { BucketLease } from '../limits/algorithm/lease.js';
import { CallNumbers, type LeaseSettings } from '../limits/algorithm/lease-call.js';
import { LeaseCaller, LeaseSlot, waitWithin } from './lease-calls.js';
import { formatBucketKey, preloadLeaseScript, redisLeaseTransport } from './lease-script.js';
import type { LeaseLimiterOptions } from './lease-store-options.js';
import {
  assertDistinctBuckets,
  normalizeCost,
  type AcquireResult,
  type BucketRef,
  type BucketSnapshot,
  type Demand,
  type Limiter,
  type LimiterObserver,
  type RefusalReason,
  type Ticket,
} from '../limits/limiter.js';
import { LocalBucketTable, type LocalBucket } from '../limits/local-store.js';
import { chargeTokens, createBucketShape, refundTokens } from '../limits/algorithm/token-bucket.js';

export type { LeaseLimiterOptions } from './lease-store-options.js';

const SOURCE_LEASE = 0;
const SOURCE_FALLBACK = 1;
const SOURCE_NONE = 2;

class LeaseTicket implements Ticket {
  settled = false;
  constructor(
    readonly owner: LeaseLimiter,
    readonly slots: LeaseSlot[],
    readonly costs: number[],
    readonly sources: number[],
    readonly fallbacks: (LocalBucket | null)[],
  ) {}
}

/** Limiter over buckets held by Redis or the primary, with per-node escrow leases. */
export class LeaseLimiter implements Limiter {
  /** This process's id in lease fields. */
  readonly nodeId: string;
  private readonly failMode: FailMode;
  private readonly settings: LeaseSettings;
  private readonly maxWaitMs: number;
  private readonly callTimeoutMs: number;
  private readonly keyPrefix: string;
  private readonly tickMs: number;
  private readonly clock: () => number;
  private readonly observer: LimiterObserver | undefined;
  private readonly caller: LeaseCaller;
  private readonly slots = new Map<string, LeaseSlot>();
  private readonly fallback = new LocalBucketTable();
  /** One sequence for all leases: a bucket forgotten and leased again must not reuse numbers. */
  private readonly callNumbers = new CallNumbers();
  private degraded = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;

  constructor(options: LeaseLimiterOptions) {
    const redis = options.redis;
    const transport = options.transport ?? (redis === undefined ? undefined : redisLeaseTransport(redis));
    if (transport === undefined) throw new TypeError('the lease limiter needs `redis` or `transport`');
    this.nodeId = options.nodeId ?? randomUUID();
    this.failMode = options.failMode ?? 'local';
    const leaseTtlMs = options.leaseTtlMs ?? 5000;
    this.settings = {
      leaseTtlMs,
      expiryMarginMs: options.expiryMarginMs ?? Math.max(50, leaseTtlMs / 10),
      maxLeaseShare: options.maxLeaseShare ?? 1,
      demandHorizonMs: 1000,
      refusalTrustMs: Math.min(1000, leaseTtlMs / 2),
    };
    this.maxWaitMs = options.maxWaitMs ?? 50;
    this.callTimeoutMs = options.callTimeoutMs ?? 250;
    this.keyPrefix = options.keyPrefix ?? 'tg';
    this.clock = options.now ?? (() => performance.now());
    this.observer = options.observer;
    this.caller = new LeaseCaller({
      transport,
      nodeId: this.nodeId,
      leaseTtlMs,
      callTimeoutMs: this.callTimeoutMs,
      breaker: new CircuitBreaker(options.breakerThreshold ?? 3, options.breakerCooldownMs ?? 1000),
      clock: this.clock,
      observer: this.observer,
      onUnreachable: (reason) => this.enterDegraded(reason),
      onReachable: () => this.leaveDegraded(),
    });
    if (redis !== undefined) {
      if (redis.status === 'wait') redis.connect().catch(() => undefined);
      // Best effort: the first call then needs no NOSCRIPT round trip.
      void preloadLeaseScript(redis);
    }
    this.tickMs = options.tickMs ?? 100;
    this.timer = setInterval(() => this.maintain(), this.tickMs);
    this.timer.unref();
  }

  async acquire(demands: readonly Demand[]): Promise<AcquireResult> {
    if (this.closed) throw new Error('limiter is closed');
    const n = demands.length;
    if (n > 1) assertDistinctBuckets(demands);
    let now = this.clock();
    const slots: LeaseSlot[] = [];
    const leases: BucketLease[] = [];
    const costs: number[] = [];
    for (const demand of demands) {
      const slot = this.resolveSlot(demand.bucket, now);
      slots.push(slot);
      leases.push(slot.lease);
      costs.push(normalizeCost(demand.cost, demand.bucket));
    }
    for (let i = 0; i < n; i++) {
      if (costs[i]! > leases[i]!.shape.capacity) return this.refuse(slots, i, 0, 'never_fits', now);
    }
    const deadline = now + this.maxWaitMs;
    const refusal: TakeRefusal = { index: -1, waitMs: 0 };
    for (let attempt = 0; ; attempt++) {
      if (takeAllOrNone(leases, costs, n, now, refusal)) return this.admitFromLeases(slots, costs, now);
      // Redis just said it cannot cover one of them: refuse without asking again.
      if (refusal.index >= 0) return this.refuse(slots, refusal.index, refusal.waitMs, 'rate_limited', now);

      if (this.caller.isUnreachable(now)) return this.decideInFailMode(slots, costs, now, 'redis unreachable');
      if (attempt > 0 && now >= deadline) {
        // Redis answers, but concurrent requests on this node took what it granted.
        const i = this.firstShort(slots, costs, now);
        return this.refuse(slots, i, slots[i]!.lease.estimateRetryMs(costs[i]!, now), 'rate_limited', now);
      }
      const waits: Promise<void>[] = [];
      for (let i = 0; i < n; i++) {
        if (slots[i]!.lease.spendable(now) < costs[i]!) waits.push(this.caller.request(slots[i]!, costs[i]!));
      }
      const answered = await waitWithin(waits, deadline - now);
      now = this.clock();
      if (!answered) return this.decideInFailMode(slots, costs, now, `redis slower than ${this.maxWaitMs} ms`);
      for (let i = 0; i < n; i++) {
        const slot = slots[i]!;
        if (!slot.lastCallOk && slot.lease.spendable(now) < costs[i]!) {
          return this.decideInFailMode(slots, costs, now, 'redis call failed');
        }
      }
    }
  }

  settle(ticket: Ticket, actualCosts: readonly number[]): void {
    if (!(ticket instanceof LeaseTicket) || ticket.owner !== this) {
      throw new TypeError('ticket was not issued by this limiter');
    }
    if (ticket.settled) return;
    if (actualCosts.length !== ticket.costs.length) {
      throw new RangeError(`settle needs ${ticket.costs.length} actual costs, got ${actualCosts.length}`);
    }
    ticket.settled = true;
    const now = this.clock();
    for (let i = 0; i < ticket.costs.length; i++) {
      let slot = ticket.slots[i]!;
      const diff = ticket.costs[i]! - normalizeCost(actualCosts[i]!, slot.lease.ref);
      const source = ticket.sources[i]!;
      if (diff === 0 || source === SOURCE_NONE) continue;
      if (source === SOURCE_FALLBACK) {
        const bucket = ticket.fallbacks[i];
        if (bucket && !bucket.evicted) {
          if (diff > 0) refundTokens(bucket.shape, bucket.state, diff, now);
          else chargeTokens(bucket.shape, bucket.state, -diff, now);
          slot.lease.fallbackSpent = Math.max(0, slot.lease.fallbackSpent - diff);
          continue;
        }
        // Redis is back and the fallback is gone: a refund has nowhere to go,
        // but debt still must be paid — by the lease, then by Redis.
        if (diff > 0) continue;
      }
      if (slot.removed) slot = this.resolveSlot(slot.lease.ref, now);
      if (diff > 0) slot.lease.refund(diff, now);
      else slot.lease.charge(-diff, now);
      // Debt must reach Redis soon so other nodes stop admitting too; refund
      // credit beyond the lease shrinks the longer it waits.
      if ((slot.lease.debtPending > 0 || slot.lease.refundPending > 0) && !this.closed) this.caller.schedule(slot);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.caller.stopped = true;
    clearInterval(this.timer);
    await this.caller.drain(this.callTimeoutMs);
    const now = this.clock();
    for (const slot of this.slots.values()) {
      const lease = slot.lease;
      if (lease.inflight) continue;
      if (lease.held > 0 || lease.avail > 0 || lease.hasReport()) {
        lease.returning = true;
        this.caller.enqueue(slot);
      }
    }
    await this.caller.flush(now);
  }

  peek(ref: BucketRef): BucketSnapshot {
    const slot = this.slots.get(ref.id);
    const now = this.clock();
    const remaining = slot === undefined ? 0 : Math.max(0, Math.floor(slot.lease.spendable(now)));
    const burst = Math.floor(ref.burst);
    return { bucket: ref, remaining, burst, ratePerSec: ref.ratePerSec, resetMs: Math.ceil(((burst - remaining) / ref.ratePerSec) * 1000) };
  }

  /** Leases held by this node (for tests, metrics and debugging). */
  describeLeases(): { id: string; avail: number; held: number; active: number }[] {
    return [...this.slots.values()].map(({ lease }) => ({
      id: lease.ref.id,
      avail: lease.avail,
      held: lease.held,
      active: lease.active,
    }));
  }

  /** True while the fail mode is in force. */
  get isDegraded(): boolean {
    return this.degraded;
  }

  private resolveSlot(ref: BucketRef, now: number): LeaseSlot {
    let slot = this.slots.get(ref.id);
    if (slot === undefined) {
      const lease = new BucketLease(ref, createBucketShape(ref.ratePerSec, ref.burst), this.settings, now, this.callNumbers);
      slot = new LeaseSlot(lease, formatBucketKey(this.keyPrefix, ref.hashTag, ref.limitName));
      this.slots.set(ref.id, slot);
    } else if (slot.lease.ref !== ref) {
      const lease = slot.lease;
      if (lease.shape.ratePerSec !== ref.ratePerSec || lease.shape.capacity !== Math.floor(ref.burst)) {
        lease.reshape(createBucketShape(ref.ratePerSec, ref.burst));
      }
      lease.ref = ref;
    }
    return slot;
  }

  /** Every cost was just taken from its lease: top up the leases that fell below low water. */
  private admitFromLeases(slots: LeaseSlot[], costs: number[], now: number): AcquireResult {
    const sources: number[] = [];
    const fallbacks: null[] = [];
    for (const slot of slots) {
      sources.push(SOURCE_LEASE);
      fallbacks.push(null);
      if (slot.lease.wantsTopUp(now)) this.caller.schedule(slot);
    }
    return this.admit(slots, costs, sources, fallbacks, now);
  }

  private admit(slots: LeaseSlot[], costs: number[], sources: number[], fallbacks: (LocalBucket | null)[], now: number): AcquireResult {
    if (this.observer?.decision) for (const slot of slots) this.observer.decision(slot.lease.ref.limitName, true);
    const ticket = new LeaseTicket(this, slots, costs, sources, fallbacks);
    return { ok: true, ticket, states: this.snapshot(slots, now) };
  }

  private refuse(slots: LeaseSlot[], index: number, retryAfterMs: number, reason: RefusalReason, now: number): AcquireResult {
    const refusedBy = slots[index]!.lease.ref;
    this.observer?.decision?.(refusedBy.limitName, false);
    return { ok: false, retryAfterMs, refusedBy, states: this.snapshot(slots, now), reason };
  }

  private firstShort(slots: LeaseSlot[], costs: number[], now: number): number {
    for (let i = 0; i < slots.length; i++) if (slots[i]!.lease.spendable(now) < costs[i]!) return i;
    return 0;
  }

  /** Redis cannot help this request now: apply the fail mode (all-or-none as well). */
  private decideInFailMode(slots: LeaseSlot[], costs: number[], now: number, reason: string): AcquireResult {
    this.enterDegraded(reason);
    const n = slots.length;
    if (this.failMode === 'open') {
      return this.admit(slots, costs, new Array<number>(n).fill(SOURCE_NONE), new Array<null>(n).fill(null), now);
    }
    const retryAfterMs = Math.max(this.caller.breakerRemainingMs(now), this.maxWaitMs);
    if (this.failMode === 'closed') return this.refuse(slots, this.firstShort(slots, costs, now), retryAfterMs, 'unavailable', now);

    const decision = takeLocalShare(
      slots.map((slot) => slot.lease),
      costs,
      this.fallback,
      now,
      retryAfterMs,
    );
    if (!decision.ok) return this.refuse(slots, decision.index, decision.retryAfterMs, decision.reason, now);
    const sources = decision.fallbacks.map((bucket) => (bucket ? SOURCE_FALLBACK : SOURCE_LEASE));
    return this.admit(slots, costs, sources, decision.fallbacks, now);
  }

  private snapshot(slots: readonly LeaseSlot[], now: number): BucketSnapshot[] {
    return slots.map(({ lease }) => {
      const remaining = lease.estimateRemaining(now);
      const capacity = lease.shape.capacity;
      return {
        bucket: lease.ref,
        remaining,
        burst: capacity,
        ratePerSec: lease.shape.ratePerSec,
        resetMs: Math.ceil(((capacity - remaining) * lease.shape.rateDen) / lease.shape.rateNum),
      };
    });
  }

  /** Housekeeping: report debt/returns, renew leases in use, return idle and excess leases. */
  private maintain(): void {
    const now = this.clock();
    for (const [id, slot] of this.slots) {
      const lease = slot.lease;
      if (lease.inflight || slot.scheduled) continue;
      lease.dropIfExpired(now);
      if (lease.isIdle(now)) {
        if (lease.held > 0 || lease.avail > 0 || lease.hasReport()) {
          lease.returning = true;
          this.caller.schedule(slot);
        } else if (lease.isEmpty()) {
          this.slots.delete(id);
          slot.removed = true;
        }
        continue;
      }
      if (lease.hasReport() || lease.needsRenewal(now) || lease.needsReport(now, this.tickMs) || lease.hasExcess(now)) {
        this.caller.schedule(slot);
      }
    }
    this.fallback.evictIdle(now, 2 * this.settings.leaseTtlMs);
  }

  private enterDegraded(reason: string): void {
    if (this.degraded) return;
    this.degraded = true;
    this.observer?.failMode?.(true, reason);
  }

  private leaveDegraded(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.fallback.clear();
    for (const slot of this.slots.values()) {
      if (slot.lease.fallbackSpent <= 0) continue;
      slot.lease.chargeFallback();
      if (!this.closed) this.caller.schedule(slot);
    }
    this.observer?.failMode?.(false, 'redis reachable again');
  }
}

/** Creates the lease store's limiter. */
export function createLeaseLimiter(options: LeaseLimiterOptions): LeaseLimiter {
  return new LeaseLimiter(options);
}
