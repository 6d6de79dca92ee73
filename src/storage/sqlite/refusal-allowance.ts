/**
 * How many refusals of one key become raw ledger rows. A refusal costs the
 * proxy nothing upstream, so a client can send them as fast as it likes; each
 * raw row costs disk forever (issue 12: a flood of refused requests grew the
 * database by 200 MB). Up to `perMinute` refusals a key (a token bucket,
 * burst = perMinute) are kept as rows for the dashboard's request list; the
 * rest are only counted in the rollups. Pure: time is the refusal's own
 * timestamp.
 */

interface Allowance {
  tokens: number;
  at: number;
}

/** Keys remembered before full (idle) buckets are forgotten. */
const MAX_TRACKED_KEYS = 10_000;

export class RefusalAllowance {
  private readonly buckets = new Map<string, Allowance>();
  private readonly perMs: number;

  constructor(private readonly perMinute: number) {
    this.perMs = perMinute / 60_000;
  }

  /** True when this refusal of `keyId` at `now` (ms) may be written as a raw row. */
  take(keyId: string, now: number): boolean {
    if (this.perMinute === Number.POSITIVE_INFINITY) return true;
    if (this.perMinute <= 0) return false;
    let bucket = this.buckets.get(keyId);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_TRACKED_KEYS) this.forgetFull(now);
      bucket = { tokens: this.perMinute, at: now };
      this.buckets.set(keyId, bucket);
    }
    // Timestamps of one key may arrive slightly out of order: never refill backwards.
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + elapsed * this.perMs);
    bucket.at = Math.max(bucket.at, now);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Drops buckets that have refilled: forgetting them changes nothing. */
  private forgetFull(now: number): void {
    for (const [keyId, bucket] of this.buckets) {
      if (bucket.tokens + Math.max(0, now - bucket.at) * this.perMs >= this.perMinute) this.buckets.delete(keyId);
    }
    // Every key refused within the last minute: forget the oldest rather than grow.
    if (this.buckets.size >= MAX_TRACKED_KEYS) {
      const first = this.buckets.keys().next();
      if (first.done !== true) this.buckets.delete(first.value);
    }
  }
}
