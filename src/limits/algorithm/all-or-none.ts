/**
 * The all-or-none take over a request's buckets (key, tenant, global),
 * written once for every store: peek every slot; if any is short, find the
 * longest wait and change nothing; else take every cost. A refused request
 * must not leave one level paid and another not.
 *
 * Allocation-free: slots are long-lived objects (a bucket, a lease), costs
 * and the refusal are the caller's reusable storage.
 */

/** One demand's source of units: an in-memory bucket, a lease, a fail-mode share. */
export interface TakeSlot {
  /**
   * Units spendable at `now` (negative while in debt), without changing the
   * slot. A slot may keep what it read for the `waitMs` or `take` of the
   * same decision: the slots of one decision are distinct, so nothing
   * changes a slot in between.
   */
  available(now: number): number;
  /**
   * Ms until `cost` fits, called when `available(now)` was below it:
   * at least 1, `NEVER_FITS` (token-bucket.ts) if it never will, or 0 when
   * the slot cannot tell (a lease: only Redis knows).
   */
  waitMs(cost: number, now: number): number;
  /** Takes `cost`, called when `available(now)` was at least `cost` for every slot. */
  take(cost: number, now: number): void;
}

/** Why the last take refused; the caller owns one and reuses it. */
export interface TakeRefusal {
  /** The slot with the longest wait (the first of equals), or -1 when no short slot could tell its wait. */
  index: number;
  /** That wait in ms; 0 when `index` is -1. */
  waitMs: number;
}

/**
 * Takes `costs[i]` from `slots[i]` for every `i < count`, or from none.
 * Returns true when every cost was taken; otherwise fills `refusal` and
 * leaves every slot as it was.
 */
export function takeAllOrNone(slots: readonly TakeSlot[], costs: readonly number[], count: number, now: number, refusal: TakeRefusal): boolean {
  if (count === 1) {
    // One bucket (a key with a single limit) needs no second pass; the loops
    // below make that decision ~10% slower (bench/limits.ts, one bucket).
    const slot = slots[0]!;
    const cost = costs[0]!;
    if (slot.available(now) >= cost) {
      slot.take(cost, now);
      return true;
    }
    const wait = slot.waitMs(cost, now);
    refusal.index = wait > 0 ? 0 : -1;
    refusal.waitMs = wait;
    return false;
  }
  let short = false;
  let worst = 0;
  let worstIndex = -1;
  for (let i = 0; i < count; i++) {
    const slot = slots[i]!;
    const cost = costs[i]!;
    if (slot.available(now) >= cost) continue;
    short = true;
    const wait = slot.waitMs(cost, now);
    if (wait > worst) {
      worst = wait;
      worstIndex = i;
    }
  }
  if (short) {
    refusal.index = worstIndex;
    refusal.waitMs = worst;
    return false;
  }
  for (let i = 0; i < count; i++) slots[i]!.take(costs[i]!, now);
  return true;
}
