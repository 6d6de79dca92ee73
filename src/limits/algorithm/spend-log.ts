/**
 * When a node spent its lease, in Redis time — pure, no allocation on the
 * spend path.
 *
 * Redis counts a lease against the burst until the node reports it spent,
 * and may refill the freed room only from when it was freed: never earlier
 * (that over-grants, as the model test showed), but the later it learns it,
 * the more refill is wasted. So each report dates its spending in a few bins,
 * each with an upper bound of the Redis time by which it was spent.
 *
 * The bound: a completed call sent at node time s ran in Redis at T ≥ R(s),
 * so R(t) < T + 1 + (t − s)·(1 + drift) for Redis time R in whole ms. The
 * call with the smallest T − s (shortest send→run delay) is the tightest
 * anchor; an older anchor ages by the drift allowance.
 */

/** How many time bins a report's spending is dated in. */
export const SPEND_BINS = 8;

/** Allowed rate difference between this node's monotonic clock and Redis' clock (0.1%; NTP slews ≤ 0.05%). */
const CLOCK_DRIFT = 0.001;

export class SpendLog {
  // Fixed arrays: bin i holds an amount and the node time of its last spend.
  private readonly amount = new Array<number>(SPEND_BINS).fill(0);
  private readonly at = new Array<number>(SPEND_BINS).fill(0);
  private bin = 0;
  /** A bin closes once it holds this much (an eighth of the lease target). */
  private quantum = 1;
  private anchorOffset = Number.NaN;
  private anchorSentAt = 0;

  /** Records spending at node time `now`. */
  record(amount: number, now: number): void {
    const i = this.bin;
    this.amount[i] = this.amount[i]! + amount;
    this.at[i] = now;
    if (this.amount[i]! >= this.quantum && i < SPEND_BINS - 1) this.bin = i + 1;
  }

  /**
   * A refund undoes the latest spending first: what is left stays dated no
   * earlier than it happened (LIFO keeps the dating conservative).
   */
  undo(amount: number): void {
    let left = amount;
    for (let i = this.bin; i >= 0 && left > 0; i--) {
      const take = Math.min(this.amount[i]!, left);
      this.amount[i] = this.amount[i]! - take;
      left -= take;
      if (this.amount[i] === 0 && i > 0 && i === this.bin) this.bin = i - 1;
    }
  }

  /** Spending recorded at least `ageMs` before `now`. */
  spentBefore(now: number, ageMs: number): number {
    let total = 0;
    for (let i = 0; i <= this.bin; i++) if (now - this.at[i]! >= ageMs) total += this.amount[i]!;
    return total;
  }

  /**
   * The report of everything recorded since the last send, as
   * `[redis ms spent by, amount, …]`, and a fresh start for the next one.
   * Empty until a call has completed (no anchor): Redis then frees the room
   * only when the report arrives — later, never earlier.
   */
  takeReport(): number[] {
    const bins: number[] = [];
    for (let i = 0; i <= this.bin; i++) {
      const amount = this.amount[i]!;
      if (amount > 0 && !Number.isNaN(this.anchorOffset)) bins.push(this.boundRedisTime(this.at[i]!), amount);
      this.amount[i] = 0;
    }
    this.bin = 0;
    return bins;
  }

  /** A call sent at node time `sentAt` ran in Redis at `redisMs`; `target` sizes the bins. */
  anchor(sentAt: number, redisMs: number, target: number): void {
    const offset = redisMs - sentAt;
    if (Number.isNaN(this.anchorOffset) || offset <= this.anchorOffset + (sentAt - this.anchorSentAt) * CLOCK_DRIFT) {
      this.anchorOffset = offset;
      this.anchorSentAt = sentAt;
    }
    this.quantum = Math.max(1, target / SPEND_BINS);
  }

  /** An upper bound of Redis time (whole ms) at node time `t`. */
  private boundRedisTime(t: number): number {
    return Math.ceil(t + this.anchorOffset + 1 + Math.abs(t - this.anchorSentAt) * CLOCK_DRIFT);
  }
}
