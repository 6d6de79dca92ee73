/**
 * The node side of an escrow lease on one bucket (docs/leases.md), as a pure state
 * machine: no I/O, the clock is passed in. The lease store
 * (src/coordination/lease-store.ts) drives it with real calls; the model test drives it with a simulated script and a virtual
 * clock, so both exercise the same code.
 *
 * Accounting, in whole bucket units:
 * - `held`  — the most of the bucket this node may claim as its lease: what
 *   Redis reported after the last call, lowered to `keep` the moment a call
 *   is sent (that call tells Redis everything above `keep` was spent).
 * - `avail` — what the node may spend without I/O, `0 ≤ avail ≤ held`.
 *   `held − avail` was spent since the last call; the next call reports it by
 *   sending `keep = avail` (absolute, so a lost reply cannot double-count).
 * - Deltas for the next report, frozen under a report id once sent and resent
 *   unchanged until a reply confirms them (the script applies each id once):
 *   `returned` unspent lease handed back (only ever computed at send time),
 *   `refundPending` credit from refunds beyond `held` — the spend they undo
 *   was already reported — dated by `refundSince`, and `debtPending`, actual
 *   cost above the reservation that the lease could not absorb.
 * The node never spends more than `avail` and stops spending
 * `expiryMarginMs` before its lease expires, timed from when the call was
 * *sent* (Redis starts the lease later than that, never earlier). So
 * `tokens + Σ leases ≤ burst` in Redis bounds what all nodes can spend.
 *
 * Spending is dated in Redis time (`spend-log.ts`); refund credit beyond the
 * lease is dated by the last completed call, and Redis credits at most the
 * least room its bucket had since then (docs/leases.md, step 6 and "Refunds").
 */
import type { BucketRef } from '../limiter.js';
import type { TakeSlot } from './all-or-none.js';
import { SpendLog } from './spend-log.js';
import type { BucketShape } from './token-bucket.js';
import { CallNumbers, type FrozenReport, type LeaseCallPlan, type LeaseReply, type LeaseSettings } from './lease-call.js';

/** Low water: top up when the lease falls below this share of its target. */
const LOW_WATER = 0.25;
/** Give back what exceeds this multiple of the target. */
const EXCESS_FACTOR = 1.5;
/** Refuse without asking Redis only if the forecast wait is longer than this. */
const MIN_LOCAL_REFUSAL_MS = 2;
/** Spending younger than this is not yet credited by Redis (clock bound + whole ms). */
const CREDIT_DELAY_MS = 3;

/** One node's lease on one bucket; a slot of the all-or-none take. */
export class BucketLease implements TakeSlot {
  avail = 0;
  held = 0;
  /** Monotonic ms after which the lease must not be spent. */
  expiresAt = Number.NEGATIVE_INFINITY;
  refundPending = 0;
  debtPending = 0;
  /** Admitted from the fail mode's local share since Redis was last reachable (see src/coordination/fail-mode.ts). */
  fallbackSpent = 0;
  /** Nodes seen on this bucket at the last call (the fail-mode share divides by it). */
  active = 1;
  lastUsed: number;
  inflight = false;
  /** Set when everything should go back (idle, shutdown); cleared once Redis confirms. */
  returning = false;

  private seq = 0;
  private report: FrozenReport | null = null;
  private refundSince = 0;
  /** Redis time of the last completed call (0 before the first). */
  private lastReplyRedisMs = 0;
  /** When our spending since the last send happened (dated for the script). */
  private readonly spendLog = new SpendLog();
  private sentAt = 0;
  private keepSent = 0;
  private demandRate = 0;
  private demandAt: number;
  private maxCost = 0;
  private maxCostAt = 0;
  private urgentMinCost = 0;
  private urgentSumCost = 0;
  // Shadow of the Redis balance from the last reply, to refuse locally
  // without asking again while Redis has just said "not enough".
  private shadowTokens = 0;
  private shadowCap = 0;
  private shadowAt = Number.NEGATIVE_INFINITY;
  private shadowUntil = Number.NEGATIVE_INFINITY;
  private ratePerMs: number;

  constructor(
    public ref: BucketRef,
    public shape: BucketShape,
    private readonly settings: LeaseSettings,
    now: number,
    /** The node's call numbers; pass the same one to every lease of a node. */
    private readonly callNumbers: CallNumbers = new CallNumbers(),
  ) {
    this.lastUsed = now;
    this.demandAt = now;
    this.ratePerMs = shape.rateNum / shape.rateDen;
  }

  /** The bucket's rate or burst changed (policy update); the lease itself stays. */
  reshape(shape: BucketShape): void {
    this.shape = shape;
    this.ratePerMs = shape.rateNum / shape.rateDen;
  }

  /** Units spendable now without I/O (0 once the lease is about to expire). */
  spendable(now: number): number {
    return now < this.expiresAt ? this.avail : 0;
  }

  /** Spends `cost` from the lease if it holds it. */
  trySpend(cost: number, now: number): boolean {
    if (this.spendable(now) < cost) return false;
    this.avail -= cost;
    this.spendLog.record(cost, now);
    this.noteSpend(cost, now);
    return true;
  }

  available(now: number): number {
    return this.spendable(now);
  }

  /**
   * The forecast wait when the last reply says Redis cannot cover `cost` yet
   * (refuse without I/O); otherwise 0: only Redis can tell, so ask it.
   */
  waitMs(cost: number, now: number): number {
    return this.redisRefuses(cost, now) ? this.estimateRetryMs(cost, now) : 0;
  }

  take(cost: number, now: number): void {
    this.trySpend(cost, now);
  }

  /** Records an admitted reservation: feeds the demand estimate that sizes the lease. */
  noteSpend(cost: number, now: number): void {
    this.lastUsed = now;
    this.decayDemand(now);
    this.demandRate += (cost * 1000) / this.settings.demandHorizonMs;
    if (cost >= this.maxCost || now - this.maxCostAt > this.settings.leaseTtlMs) {
      this.maxCost = cost;
      this.maxCostAt = now;
    }
  }

  /**
   * Target lease size: about `demandHorizonMs` of this node's recent admitted
   * demand, at least the largest recent reservation, at most a share of the
   * burst — `maxLeaseShare`, narrowed to `1.5/N` (not below 1/4) when N nodes
   * share the bucket so one busy node cannot park the whole burst.
   */
  target(now: number): number {
    this.decayDemand(now);
    const capacity = this.shape.capacity;
    const share = Math.min(this.settings.maxLeaseShare, Math.max(0.25, 1.5 / Math.max(1, this.active)));
    const demand = (this.demandRate * this.settings.demandHorizonMs) / 1000;
    const sized = Math.min(Math.ceil(demand), Math.floor(capacity * share));
    return Math.min(capacity, Math.max(sized, this.maxCost, 1));
  }

  /**
   * True when a background top-up is due: below low water, and (as far as
   * the last reply lets us forecast) Redis would grant a useful amount.
   */
  wantsTopUp(now: number): boolean {
    if (this.inflight || this.returning) return false;
    const target = this.target(now);
    const spendable = this.spendable(now);
    if (spendable >= LOW_WATER * target) return false;
    if (now >= this.shadowUntil) return true;
    return this.predictRedis(now, CREDIT_DELAY_MS) >= Math.max(1, Math.min(target - spendable, LOW_WATER * target));
  }

  /**
   * True when the last reply says Redis cannot cover `cost` yet: refuse
   * locally (no I/O) until `refusalTrustMs` passes or refill should suffice.
   */
  redisRefuses(cost: number, now: number): boolean {
    // A call in flight will bring fresher news (and reports spending the
    // forecast no longer sees): wait for it rather than refuse.
    if (this.inflight || now >= this.shadowUntil) return false;
    // Optimistic about our own spending (Redis frees that room within a few
    // ms); and a wait shorter than a round trip is worth a call, not a 429.
    const missing = cost - this.spendable(now) - this.predictRedis(now, 0);
    return missing > 0 && missing / this.ratePerMs > MIN_LOCAL_REFUSAL_MS;
  }

  /** Tokens spent since the last call, still counted as leased in Redis. */
  hasUnreportedSpend(): boolean {
    return !this.inflight && this.held > this.avail;
  }

  /**
   * A report of spent tokens is due: Redis caps its refill by our lease, so
   * unreported spending wastes refill once the bucket looks full. Report
   * about when the refill of what we spent would be done (at most half a
   * lease life; not more often than every `minMs`).
   */
  needsReport(now: number, minMs: number): boolean {
    if (!this.hasUnreportedSpend()) return false;
    const refillMs = (this.held - this.avail) / this.ratePerMs;
    return now - this.sentAt >= Math.max(minMs, Math.min(refillMs, this.settings.leaseTtlMs / 2));
  }

  /** Estimated ms until `cost` fits, from the lease and the last known Redis balance. */
  estimateRetryMs(cost: number, now: number): number {
    const missing = cost - this.spendable(now) - this.predictRedis(now);
    if (missing <= 0) return 1;
    return Math.max(1, Math.ceil(missing / this.ratePerMs));
  }

  /** Best estimate of the units left for the client (lease plus what Redis holds). */
  estimateRemaining(now: number): number {
    const redis = now - this.shadowAt < this.settings.leaseTtlMs ? Math.max(0, Math.floor(this.predictRedis(now))) : 0;
    return Math.min(this.shape.capacity, this.spendable(now) + redis);
  }

  /** A request that waits for Redis registers its cost here before the next call. */
  addUrgent(cost: number): void {
    this.urgentMinCost = this.urgentMinCost === 0 ? cost : Math.min(this.urgentMinCost, cost);
    this.urgentSumCost += cost;
  }

  /**
   * Unused reservation comes back to the lease, up to `held` (what Redis
   * counts as leased to us); the rest is credit for Redis, dated (see above).
   */
  refund(amount: number, now: number): void {
    const room = now < this.expiresAt || this.inflight ? Math.max(0, this.held - this.avail) : 0;
    const credit = Math.min(room, amount);
    this.avail += credit;
    this.spendLog.undo(credit);
    if (amount > credit) {
      if (this.refundPending === 0) this.refundSince = this.lastReplyRedisMs;
      this.refundPending += amount - credit;
    }
  }

  /** Actual cost above the reservation: paid from the lease, the rest becomes debt for Redis. */
  charge(amount: number, now: number): void {
    const take = Math.min(this.spendable(now), amount);
    this.avail -= take;
    if (take > 0) this.spendLog.record(take, now);
    this.debtPending += amount - take;
  }

  /** Redis answers again: charge what the local share admitted meanwhile, up to `burst/N`. */
  chargeFallback(): void {
    if (this.fallbackSpent <= 0) return;
    this.debtPending += Math.min(this.fallbackSpent, Math.floor(this.shape.capacity / Math.max(1, this.active)));
    this.fallbackSpent = 0;
  }

  /** Something must reach Redis even without demand: a report, or a lease to give back. */
  hasReport(): boolean {
    return this.report !== null || this.refundPending > 0 || this.debtPending > 0;
  }

  /** Nothing held, nothing owed: the node can forget this bucket. */
  isEmpty(): boolean {
    return !this.inflight && this.held === 0 && this.avail === 0 && !this.hasReport();
  }

  /** No admitted request for two lease lives. */
  isIdle(now: number): boolean {
    return now - this.lastUsed >= 2 * this.settings.leaseTtlMs;
  }

  /** A held lease past half its life is renewed while the bucket is in use. */
  needsRenewal(now: number): boolean {
    return !this.inflight && this.held > 0 && now >= this.sentAt + this.settings.leaseTtlMs / 2;
  }

  /** The lease holds more than 1.5× its target: the next call gives the excess back. */
  hasExcess(now: number): boolean {
    return this.spendable(now) > EXCESS_FACTOR * this.target(now);
  }

  /** Forgets a lease whose expiry passed while no call was in flight (Redis drops it too). */
  dropIfExpired(now: number): void {
    if (!this.inflight && now >= this.expiresAt && (this.avail !== 0 || this.held !== 0)) {
      this.avail = 0;
      this.held = 0;
    }
  }

  /** Starts a call: freezes the report and computes keep/want/min. */
  beginCall(now: number): LeaseCallPlan {
    if (this.inflight) throw new Error(`lease "${this.ref.id}" already has a call in flight`);
    this.inflight = true;
    this.seq = this.callNumbers.next();
    if (now >= this.expiresAt) {
      this.avail = 0;
      this.held = 0;
    }
    const target = this.target(now);
    // Give back (idle, shutdown, above 1.5× target) only in a fresh report:
    // while one is in doubt the return waits for the next call.
    let returned = 0;
    if (this.report === null) {
      if (this.returning) returned = this.avail;
      else if (this.avail > EXCESS_FACTOR * target) returned = this.avail - target;
      this.avail -= returned;
    }
    if (this.report !== null && now - this.report.firstSentAt > 5 * this.settings.leaseTtlMs) {
      // Redis forgets a silent node after 10 lease lives; a return resent that
      // late could be applied twice. Dropping it only under-admits.
      this.report.returned = 0;
      this.report.refunded = 0;
    }
    if (this.report === null && (returned > 0 || this.refundPending > 0 || this.debtPending > 0)) {
      this.report = {
        id: this.seq,
        returned,
        refunded: this.refundPending,
        refundedSince: this.refundSince,
        debt: this.debtPending,
        firstSentAt: now,
      };
      this.refundPending = 0;
      this.debtPending = 0;
    }
    const keep = this.avail;
    this.held = keep;
    let want = 0;
    let min = 0;
    if (!this.returning) {
      min = this.urgentMinCost > keep ? this.urgentMinCost - keep : 0;
      want = Math.min(this.shape.capacity, Math.max(target - keep, this.urgentSumCost - keep, min, 0));
    }
    this.urgentMinCost = 0;
    this.urgentSumCost = 0;
    this.sentAt = now;
    this.keepSent = keep;
    const spentBins = this.spendLog.takeReport();
    return {
      seq: this.seq,
      reportId: this.report?.id ?? 0,
      keep,
      returned: this.report?.returned ?? 0,
      refunded: this.report?.refunded ?? 0,
      refundedSince: this.report?.refundedSince ?? 0,
      debt: this.report?.debt ?? 0,
      want,
      min,
      spentBins,
    };
  }

  /** Applies a reply. Returns false if the script ignored the call as stale. */
  finishCall(reply: LeaseReply, now: number): boolean {
    this.inflight = false;
    if (reply.status !== 1) return false;
    this.report = null;
    this.lastReplyRedisMs = reply.nowMs;
    this.spendLog.anchor(this.sentAt, reply.nowMs, this.target(now));
    // Redis kept less than we claimed only if the lease expired there first;
    // what we spent meanwhile came from a then-live lease, so no debt arises.
    const lost = Math.max(0, this.keepSent - reply.kept);
    this.avail = Math.min(Math.max(0, this.avail - lost) + reply.granted, reply.lease);
    this.held = reply.lease;
    this.expiresAt = this.sentAt + this.settings.leaseTtlMs - this.settings.expiryMarginMs;
    this.active = Math.max(1, reply.active);
    this.shadowTokens = reply.tokens + reply.carry / this.shape.rateDen;
    this.shadowCap = this.shape.capacity - reply.outstanding;
    this.shadowAt = now;
    this.shadowUntil = now + this.settings.refusalTrustMs;
    if (this.returning && this.held === 0) this.returning = false;
    return true;
  }

  /** A call failed or timed out: its report stays frozen and is resent as is. */
  failCall(): void {
    this.inflight = false;
  }

  /**
   * Forecast of what Redis could grant now: its balance at the last reply
   * plus refill, capped by the room it had then plus our own spending since,
   * counting only spending older than `creditDelayMs` (the script credits
   * dated spending a little after it happened). Other nodes' spending is
   * unknown, so this errs low; `refusalTrustMs` bounds that.
   */
  private predictRedis(now: number, creditDelayMs = 0): number {
    if (this.shadowAt === Number.NEGATIVE_INFINITY) return 0;
    const freed = this.spendLog.spentBefore(now, creditDelayMs);
    return Math.min(this.shadowCap + freed, this.shadowTokens + (now - this.shadowAt) * this.ratePerMs);
  }

  private decayDemand(now: number): void {
    const dt = now - this.demandAt;
    if (dt <= 0) return;
    this.demandRate *= Math.exp(-dt / this.settings.demandHorizonMs);
    this.demandAt = now;
  }
}
