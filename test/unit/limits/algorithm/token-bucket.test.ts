import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  approximateRatePerMs,
  chargeTokens,
  computeRetryAfterMs,
  createBucketShape,
  createBucketState,
  NEVER_FITS,
  peekTokens,
  refillBalance,
  refillBucket,
  refundTokens,
  takeTokens,
  type Balance,
  type BucketShape,
  type BucketState,
} from '../../../../src/limits/algorithm/token-bucket.js';

/** Exact balance as a fraction of units: tokens + carry/den. */
function balance(shape: BucketShape, state: BucketState): number {
  return state.tokens + state.carry / shape.rateDen;
}

const shapes = fc
  .record({
    amount: fc.integer({ min: 1, max: 100_000 }),
    period: fc.constantFrom(1, 60, 3600, 86_400),
    burst: fc.integer({ min: 1, max: 10_000 }),
  })
  .map(({ amount, period, burst }) => createBucketShape(amount / period, burst));

/** Random schedules: (gap ms, cost) pairs. */
const schedules = fc.array(fc.tuple(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 50 })), {
  minLength: 1,
  maxLength: 200,
});

describe('rate representation', () => {
  it('turns typical rates into exact fractions per millisecond', () => {
    expect(approximateRatePerMs(10)).toEqual({ num: 1, den: 100 });
    expect(approximateRatePerMs(1 / 60)).toEqual({ num: 1, den: 60_000 });
    expect(approximateRatePerMs(40_000 / 60)).toEqual({ num: 2, den: 3 });
    expect(approximateRatePerMs(100_000_000 / 86_400)).toEqual({ num: 125, den: 108 });
    expect(approximateRatePerMs(1 / 86_400)).toEqual({ num: 1, den: 86_400_000 });
    expect(approximateRatePerMs(2.5 / 60)).toEqual({ num: 1, den: 24_000 });
  });

  it('never rounds a rate up', () => {
    fc.assert(
      fc.property(fc.double({ min: 1e-6, max: 1e7, noNaN: true }), (rate) => {
        const { num, den } = approximateRatePerMs(rate);
        expect(num / den).toBeLessThanOrEqual((rate / 1000) * (1 + 1e-12));
        expect(num * den).toBeLessThanOrEqual(2 ** 50);
      }),
    );
  });
});

describe('token bucket math', () => {
  it('never holds more than the burst', () => {
    fc.assert(
      fc.property(shapes, schedules, (shape, steps) => {
        const state = createBucketState(shape, 0);
        let now = 0;
        for (const [gap, cost] of steps) {
          now += gap;
          takeTokens(shape, state, cost, now);
          expect(balance(shape, state)).toBeLessThanOrEqual(shape.capacity);
          expect(state.carry).toBeGreaterThanOrEqual(0);
          expect(state.carry).toBeLessThan(shape.rateDen);
        }
      }),
    );
  });

  it('never grants more than burst + rate·Δ in any window', () => {
    fc.assert(
      fc.property(shapes, schedules, (shape, steps) => {
        const state = createBucketState(shape, 0);
        const grants: [number, number][] = [];
        let now = 0;
        for (const [gap, cost] of steps) {
          now += gap;
          if (takeTokens(shape, state, cost, now) === 0) grants.push([now, cost]);
        }
        for (let i = 0; i < grants.length; i++) {
          let spent = 0;
          for (let j = i; j < grants.length; j++) {
            spent += grants[j]![1];
            const windowMs = grants[j]![0] - grants[i]![0];
            // Exact rational bound: spent ≤ burst + floor(Δ·num/den).
            expect(spent).toBeLessThanOrEqual(shape.capacity + Math.floor((windowMs * shape.rateNum) / shape.rateDen));
          }
        }
      }),
    );
  });

  it('leaves the state untouched when it refuses', () => {
    fc.assert(
      fc.property(shapes, schedules, fc.integer({ min: 1, max: 20_000 }), (shape, steps, bigCost) => {
        const state = createBucketState(shape, 0);
        let now = 0;
        for (const [gap, cost] of steps) {
          now += gap;
          takeTokens(shape, state, cost, now);
        }
        const before = { ...state };
        const wait = takeTokens(shape, state, peekTokens(shape, state, now + 7) + bigCost, now + 7);
        expect(wait).toBeGreaterThan(0);
        expect(state).toEqual(before);
      }),
    );
  });

  it('refills exactly rate·t after sleeping t', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 60_000 }), (ratePerSec, seconds, startMs) => {
        const burst = ratePerSec * 200;
        const shape = createBucketShape(ratePerSec, burst);
        const state = createBucketState(shape, startMs, true);
        expect(peekTokens(shape, state, startMs + seconds * 1000)).toBe(ratePerSec * seconds);
      }),
    );
  });

  it('refills a one-per-minute bucket, one token per minute, even when polled every millisecond', () => {
    const shape = createBucketShape(1 / 60, 5);
    const state = createBucketState(shape, 0, true);
    let granted = 0;
    for (let t = 1; t <= 10 * 60_000; t++) if (takeTokens(shape, state, 1, t) === 0) granted++;
    expect(granted).toBe(10);
  });

  it('does not drift over a million operations', () => {
    // 40 000 tokens per minute = 2/3 per ms: a float bucket accumulates error here.
    const shape = createBucketShape(40_000 / 60, 10_000_000);
    const state = createBucketState(shape, 0, true);
    let taken = 0;
    let now = 0;
    for (let i = 0; i < 1_000_000; i++) {
      now += 1 + (i % 7);
      const cost = 1 + (i % 3);
      if (takeTokens(shape, state, cost, now) === 0) taken += cost;
    }
    expect(shape).toMatchObject({ rateNum: 2, rateDen: 3 });
    // Everything earned is either taken or still in the bucket, exactly:
    // (taken + tokens)·3 + carry = 2·now, all integers.
    expect((taken + state.tokens) * 3 + state.carry).toBe(2 * now);
    expect(taken).toBeGreaterThan(1_900_000);
  });

  it('tells exactly when a refused request will fit', () => {
    fc.assert(
      fc.property(shapes, fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 1, max: 10_000 }), (shape, at, rawCost) => {
        const cost = Math.min(rawCost, shape.capacity);
        const state = createBucketState(shape, at, true);
        const wait = takeTokens(shape, state, cost, at);
        if (wait === 0) return;
        expect(wait).toBe(Math.ceil((cost * shape.rateDen) / shape.rateNum));
        expect(takeTokens(shape, { ...state }, cost, at + wait - 1)).toBeGreaterThan(0);
        expect(takeTokens(shape, state, cost, at + wait)).toBe(0);
      }),
    );
  });

  it('says a cost above the burst never fits', () => {
    const shape = createBucketShape(10, 10);
    const state = createBucketState(shape, 0);
    expect(takeTokens(shape, state, 11, 0)).toBe(NEVER_FITS);
    expect(state.tokens).toBe(10);
  });

  it('never runs time backwards', () => {
    const shape = createBucketShape(1, 10);
    const state = createBucketState(shape, 10_000, true);
    takeTokens(shape, state, 0, 5_000);
    expect(state.ts).toBe(10_000);
    expect(peekTokens(shape, state, 12_000)).toBe(2);
  });

  it('starts empty when asked and full otherwise', () => {
    const shape = createBucketShape(1, 10);
    expect(createBucketState(shape, 0).tokens).toBe(10);
    expect(createBucketState(shape, 0, true).tokens).toBe(0);
  });

  it('keeps debt until refill repays it', () => {
    const shape = createBucketShape(10, 10);
    const state = createBucketState(shape, 0);
    expect(takeTokens(shape, state, 5, 0)).toBe(0);
    chargeTokens(shape, state, 20, 0);
    expect(state.tokens).toBe(-15);
    expect(computeRetryAfterMs(shape, state, 1)).toBe(1600);
    expect(takeTokens(shape, state, 1, 1599)).toBeGreaterThan(0);
    expect(takeTokens(shape, state, 1, 1600)).toBe(0);
  });

  it('refunds up to the burst and no further', () => {
    const shape = createBucketShape(1, 10);
    const state = createBucketState(shape, 0);
    takeTokens(shape, state, 4, 0);
    refundTokens(shape, state, 3, 0);
    expect(state.tokens).toBe(9);
    refundTokens(shape, state, 3, 0);
    expect(state.tokens).toBe(10);
  });

  it('refills in place or into scratch identically', () => {
    fc.assert(
      fc.property(shapes, schedules, (shape, steps) => {
        const a = createBucketState(shape, 0, true);
        const b = createBucketState(shape, 0, true);
        const scratch = { tokens: 0, carry: 0, ts: 0 };
        let now = 0;
        for (const [gap] of steps) {
          now += gap;
          refillBucket(shape, a, now, a);
        }
        refillBucket(shape, b, now, scratch);
        expect(scratch).toEqual(a);
      }),
    );
  });

  it('refills a balance the same in one span or in pieces (the step the lease script repeats)', () => {
    fc.assert(
      fc.property(shapes, schedules, (shape, steps) => {
        const whole: Balance = { tokens: 0, carry: 0 };
        const pieces: Balance = { tokens: 0, carry: 0 };
        let span = 0;
        for (const [gap] of steps) {
          span += gap;
          refillBalance(pieces, gap, shape.capacity, shape.rateNum, shape.rateDen);
        }
        refillBalance(whole, span, shape.capacity, shape.rateNum, shape.rateDen);
        expect(pieces).toEqual(whole);
      }),
    );
  });

  it('leaves a balance at its cap, or over no time, as it is', () => {
    const shape = createBucketShape(1, 10);
    const full: Balance = { tokens: 10, carry: 0 };
    refillBalance(full, 5000, 10, shape.rateNum, shape.rateDen);
    expect(full).toEqual({ tokens: 10, carry: 0 });
    const partial: Balance = { tokens: 4, carry: 1 };
    refillBalance(partial, 0, 10, shape.rateNum, shape.rateDen);
    expect(partial).toEqual({ tokens: 4, carry: 1 });
  });
});
