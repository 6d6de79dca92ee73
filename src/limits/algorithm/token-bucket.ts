/**
 * Pure token-bucket math: lazy refill, take, charge (debt), refund, retry-after.
 * No I/O and no clock of its own — every function takes `now` in milliseconds.
 * The Redis script in `lua/lease.lua` implements the same refill step line for
 * line, so a bucket behaves identically in memory and in Redis; its TypeScript
 * model calls {@link refillBalance} here.
 *
 * ## Representation (why integers and a rational rate)
 * A balance is `tokens + carry / rateDen`: `tokens` is an integer number of
 * bucket units (negative while the bucket is in debt) and `carry ∈ [0, rateDen)`
 * is the exact fractional part. The rate is the exact fraction
 * `rateNum / rateDen` units per millisecond, derived once from `ratePerSec`
 * (1/min → 1/60000, 40000/min → 2/3, $100/day in µUSD → 125/108).
 * Refilling Δt ms adds `Δt·rateNum` to the numerator and carries the remainder,
 * so the credit earned over any span is `floor(span·rateNum/rateDen)` exactly,
 * whatever the number of steps it was computed in: no float drift after
 * millions of operations, and a 1-per-minute bucket still refills (the
 * "rounded down to zero" trap of fixed-point milli-units cannot happen).
 * Milli-units would have been simpler but are not exact for rates like 1/60
 * per second; float tokens drift. All intermediate products stay below 2^53
 * because `rateNum·rateDen ≤ MAX_RATE_PRODUCT` (see {@link createBucketShape}).
 *
 * Costs are integer units (requests, tokens, micro-USD); callers round a
 * weighted cost up before it reaches a bucket.
 */

/** Immutable parameters of one bucket, derived once from rate and burst. */
export interface BucketShape {
  /** Capacity in whole units: `floor(burst)`. */
  readonly capacity: number;
  /** Units earned per `rateDen` milliseconds (integer ≥ 1). */
  readonly rateNum: number;
  /** Milliseconds per `rateNum` units (integer ≥ 1). */
  readonly rateDen: number;
  /** The rate as configured, in units per second (for headers and estimates). */
  readonly ratePerSec: number;
}

/** Mutable state of one bucket. Balance = `tokens + carry / shape.rateDen`. */
export interface BucketState extends Balance {
  /** Whole units; negative while in debt. */
  tokens: number;
  /** Exact fractional credit, an integer in `[0, shape.rateDen)`. */
  carry: number;
  /** Last refill time, whole milliseconds; never decreases. */
  ts: number;
}

/**
 * Upper bound for `rateNum · rateDen`. Refill computes `r·rateNum + carry`
 * with `r < rateDen`, so this keeps every intermediate value an exact double.
 */
const MAX_RATE_PRODUCT = 2 ** 50;

/** Returned by {@link takeTokens} when the cost exceeds the capacity: it can never fit. */
export const NEVER_FITS = Number.POSITIVE_INFINITY;

/**
 * Builds the shape of a bucket from its rate (units per second) and burst.
 * The rate becomes the closest simple fraction per millisecond: exact for any
 * rate written as a decimal amount per s/min/h/day; if an exotic rate would
 * need a fraction too large for exact double arithmetic, the nearest smaller
 * fraction is used (the bucket then refills a hair slower, never faster).
 */
export function createBucketShape(ratePerSec: number, burst: number): BucketShape {
  if (!(Number.isFinite(ratePerSec) && ratePerSec > 0)) {
    throw new RangeError(`bucket rate must be a positive number (got ${ratePerSec})`);
  }
  if (!(Number.isFinite(burst) && burst >= 1)) {
    throw new RangeError(`bucket burst must be at least 1 unit (got ${burst})`);
  }
  const { num, den } = approximateRatePerMs(ratePerSec);
  return { capacity: Math.floor(burst), rateNum: num, rateDen: den, ratePerSec };
}

/** A fresh bucket: full, or empty when `startEmpty` (abuse-prone keys earn their first tokens). */
export function createBucketState(shape: BucketShape, now: number, startEmpty = false): BucketState {
  return { tokens: startEmpty ? 0 : shape.capacity, carry: 0, ts: Math.floor(now) };
}

/** A balance: whole units and the exact fraction in `1/rateDen` units, as in {@link BucketState}. */
export interface Balance {
  tokens: number;
  carry: number;
}

/**
 * The refill step, the one both {@link refillBucket} and the model of
 * `lua/lease.lua` (src/coordination/lease-script-model.ts, which refills
 * piecewise under a cap that grows as leases end) use: adds `dt` ms at
 * `rateNum/rateDen` units per ms to a balance below `cap`, stopping at `cap`.
 * Changes nothing when `dt ≤ 0` or the balance already reaches `cap`; a
 * balance above `cap` is the caller's to clamp.
 */
export function refillBalance(balance: Balance, dt: number, cap: number, rateNum: number, rateDen: number): void {
  const tokens = balance.tokens;
  if (dt <= 0 || tokens >= cap) return;
  // Split Δt = q·den + r so the products stay small: q·num whole units
  // plus (r·num + carry)/den, with r·num + carry < den·num + den ≤ 2^51.
  let q = Math.floor(dt / rateDen);
  let r = dt - q * rateDen;
  if (r < 0) {
    q -= 1;
    r += rateDen;
  } else if (r >= rateDen) {
    q += 1;
    r -= rateDen;
  }
  const whole = q * rateNum;
  if (whole >= cap - tokens) {
    balance.tokens = cap;
    balance.carry = 0;
    return;
  }
  const x = r * rateNum + balance.carry;
  const add = floorDivide(x, rateDen);
  balance.tokens = tokens + whole + add;
  balance.carry = x - add * rateDen;
  if (balance.tokens >= cap) {
    balance.tokens = cap;
    balance.carry = 0;
  }
}

/**
 * Writes into `into` the state of `from` refilled up to `now`:
 * `min(capacity, balance + Δt·rate)`, with `ts = max(ts, now)` so time never
 * runs backwards. `into` may be `from` (refill in place) or a scratch object
 * (peek without committing). A balance above capacity (after a burst was
 * lowered) is clamped down to it.
 */
export function refillBucket(shape: BucketShape, from: BucketState, now: number, into: BucketState): void {
  const t = Math.floor(now);
  const ts = from.ts;
  into.tokens = from.tokens;
  into.carry = from.carry;
  into.ts = ts;
  if (t > ts) {
    refillBalance(into, t - ts, shape.capacity, shape.rateNum, shape.rateDen);
    into.ts = t;
  }
  if (into.tokens > shape.capacity) {
    into.tokens = shape.capacity;
    into.carry = 0;
  }
}

/**
 * Milliseconds until a bucket in `refilled` state (already refilled to now)
 * holds `cost`: `ceil((cost − balance) / rate)`, 0 if it already does,
 * {@link NEVER_FITS} if `cost` exceeds the capacity.
 */
export function computeRetryAfterMs(shape: BucketShape, refilled: BucketState, cost: number): number {
  if (cost > shape.capacity) return NEVER_FITS;
  if (refilled.tokens >= cost) return 0;
  // Deficit in 1/den units: (cost − tokens)·den − carry; time = deficit / num ms.
  const deficit = (cost - refilled.tokens) * shape.rateDen - refilled.carry;
  if (deficit <= Number.MAX_SAFE_INTEGER) return Math.max(1, ceilDivide(deficit, shape.rateNum));
  // Astronomically deep debt: float division, plus one ms so we never say "too early".
  return Math.ceil(deficit / shape.rateNum) + 1;
}

/** Milliseconds until the bucket in `refilled` state is full again (0 if full). */
export function computeMsUntilFull(shape: BucketShape, refilled: BucketState): number {
  return computeRetryAfterMs(shape, refilled, shape.capacity);
}

// One scratch state for peeking: JS is single-threaded and no function below
// re-enters, so sharing it is safe and keeps the hot path allocation-free.
const peek: BucketState = { tokens: 0, carry: 0, ts: 0 };

/**
 * Takes `cost` units if the refilled balance holds them. Returns 0 when
 * granted (state refilled and debited), otherwise the retry-after in ms and
 * leaves `state` exactly as it was — a refusal writes nothing, least of all a
 * negative balance, which would make a refused client pay for a request it
 * never got. {@link NEVER_FITS} when `cost > capacity`.
 */
export function takeTokens(shape: BucketShape, state: BucketState, cost: number, now: number): number {
  refillBucket(shape, state, now, peek);
  if (peek.tokens < cost) return computeRetryAfterMs(shape, peek, cost);
  state.tokens = peek.tokens - cost;
  state.carry = peek.carry;
  state.ts = peek.ts;
  return 0;
}

/**
 * Debits `amount` unconditionally: the actual cost turned out above the
 * reservation. The balance may go negative (debt); refill repays it and
 * nothing fits until then.
 */
export function chargeTokens(shape: BucketShape, state: BucketState, amount: number, now: number): void {
  refillBucket(shape, state, now, state);
  state.tokens -= amount;
}

/** Credits back `amount` of a reservation that was not used, up to the capacity. */
export function refundTokens(shape: BucketShape, state: BucketState, amount: number, now: number): void {
  refillBucket(shape, state, now, state);
  state.tokens += amount;
  if (state.tokens >= shape.capacity) {
    state.tokens = shape.capacity;
    state.carry = 0;
  }
}

/** Whole units available at `now` (negative while in debt), without changing `state`. */
export function peekTokens(shape: BucketShape, state: BucketState, now: number): number {
  refillBucket(shape, state, now, peek);
  return peek.tokens;
}

/** True when the bucket, refilled to `now`, is full — dropping it then loses nothing. */
export function isBucketFull(shape: BucketShape, state: BucketState, now: number): boolean {
  refillBucket(shape, state, now, peek);
  return peek.tokens >= shape.capacity;
}

/** `floor(x / d)` for non-negative integers, exact even when the float quotient rounds up. */
function floorDivide(x: number, d: number): number {
  let q = Math.floor(x / d);
  if (q * d > x) q -= 1;
  else if ((q + 1) * d <= x) q += 1;
  return q;
}

/** `ceil(x / d)` for non-negative integers below 2^53. */
function ceilDivide(x: number, d: number): number {
  const q = floorDivide(x, d);
  return q * d === x ? q : q + 1;
}

/**
 * Rate per second → exact fraction `num/den` per millisecond, by continued
 * fractions on `ratePerSec` (then `/1000`). Accepts the first convergent within
 * 1e-12 relative error (that is the intended decimal/period fraction, float
 * noise removed); stops early if `num·den` would pass {@link MAX_RATE_PRODUCT}
 * and then keeps the last convergent *below* the rate so we under-grant.
 */
export function approximateRatePerMs(ratePerSec: number): { num: number; den: number } {
  let h0 = 0;
  let h1 = 1;
  let k0 = 1;
  let k1 = 0;
  let y = ratePerSec;
  let below: { num: number; den: number } | undefined;
  for (let i = 0; i < 64; i++) {
    const a = Math.floor(y);
    const h2 = a * h1 + h0;
    const k2 = a * k1 + k0;
    const reduced = reducePerMs(h2, k2);
    if (reduced.num * reduced.den > MAX_RATE_PRODUCT || !Number.isSafeInteger(h2) || !Number.isSafeInteger(k2)) break;
    const value = h2 / k2;
    if (value <= ratePerSec && h2 > 0) below = reduced;
    if (Math.abs(value - ratePerSec) <= ratePerSec * 1e-12) return reduced;
    const frac = y - a;
    if (frac <= 0) return reduced;
    y = 1 / frac;
    h0 = h1;
    h1 = h2;
    k0 = k1;
    k1 = k2;
  }
  if (below) return below;
  throw new RangeError(`bucket rate ${ratePerSec}/s is too small to represent`);
}

/** (p/q units per second) → reduced (num/den units per millisecond). */
function reducePerMs(p: number, q: number): { num: number; den: number } {
  const den = q * 1000;
  const g = greatestCommonDivisor(p, den);
  return { num: p / g, den: den / g };
}

function greatestCommonDivisor(a: number, b: number): number {
  while (b !== 0) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}
