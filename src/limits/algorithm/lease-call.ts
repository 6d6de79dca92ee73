/**
 * What crosses between a node and Redis in one lease call: the node's
 * tuning, the call's numbers and arguments (ARGV order of lua/lease.lua) and
 * the script's reply. The protocol itself is docs/leases.md.
 */
/** Tuning shared by every lease of one node. */
export interface LeaseSettings {
  /** Lease lifetime in Redis, ms. */
  readonly leaseTtlMs: number;
  /** Stop spending this long before the lease expires, ms. */
  readonly expiryMarginMs: number;
  /** Upper bound of a lease as a fraction of the burst (0–1]. */
  readonly maxLeaseShare: number;
  /** The target lease is this much of the node's recent demand, ms (about one second). */
  readonly demandHorizonMs: number;
  /** How long a "not enough tokens" reply is trusted to refuse locally, ms. */
  readonly refusalTrustMs: number;
}

/** The arguments of one call, without the bucket's static fields (ARGV order of the script). */
export interface LeaseCallPlan {
  readonly seq: number;
  readonly reportId: number;
  readonly keep: number;
  readonly returned: number;
  readonly refunded: number;
  readonly refundedSince: number;
  readonly debt: number;
  readonly want: number;
  readonly min: number;
  /**
   * When this report's spending happened, in up to SPEND_BINS (spend-log.ts) bins:
   * [redis ms by which the bin was spent, amount, …]. Lets the script refill
   * the freed room from then on instead of only from now.
   */
  readonly spentBins: readonly number[];
}

/** The script's reply (lua/lease.lua), all integers; decoded by src/coordination/lease-script.ts. */
export interface LeaseReply {
  /** 1 applied; 0 the call was stale (an older call number than one already seen). */
  readonly status: number;
  readonly granted: number;
  /** How much of `keep` the node still holds (less if its lease had expired). */
  readonly kept: number;
  /** This node's lease after the call. */
  readonly lease: number;
  readonly tokens: number;
  readonly carry: number;
  readonly outstanding: number;
  /** Nodes with a live entry on this bucket, this one included. */
  readonly active: number;
  /** Redis time of the call, ms. */
  readonly nowMs: number;
  /** When `min > 0` and nothing was granted: ms until `min` could fit. */
  readonly retryMs: number;
}

/** A report sent under an id, resent unchanged until a reply confirms it (the script applies each id once). */
export interface FrozenReport {
  readonly id: number;
  returned: number;
  refunded: number;
  readonly refundedSince: number;
  readonly debt: number;
  readonly firstSentAt: number;
}

/**
 * A node's call numbers, shared by all its leases. The script rejects a call
 * whose number is not above the last one it saw from the node on the bucket,
 * and remembers that number after the node forgot the bucket (idle, empty):
 * numbers restarting per lease would make every call of a bucket leased
 * again stale until they caught up (docs/leases.md, "One call").
 */
export class CallNumbers {
  private last = 0;

  next(): number {
    this.last += 1;
    return this.last;
  }
}
