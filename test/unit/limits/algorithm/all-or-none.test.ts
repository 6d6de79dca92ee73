import { describe, expect, it } from 'vitest';
import { takeAllOrNone, type TakeRefusal, type TakeSlot } from '../../../../src/limits/algorithm/all-or-none.js';

/** A slot holding `units`, refilling one unit per `msPerUnit` (0: it cannot tell). */
function createSlot(units: number, msPerUnit = 10): TakeSlot & { units: number } {
  return {
    units,
    available() {
      return this.units;
    },
    waitMs(cost: number) {
      return (cost - this.units) * msPerUnit;
    },
    take(cost: number) {
      this.units -= cost;
    },
  };
}

describe('all-or-none take', () => {
  it('takes every cost when every slot holds it', () => {
    const slots = [createSlot(5), createSlot(1), createSlot(0)];
    const refusal: TakeRefusal = { index: 7, waitMs: 7 };
    expect(takeAllOrNone(slots, [5, 1, 0], 3, 0, refusal)).toBe(true);
    expect(slots.map((s) => s.units)).toEqual([0, 0, 0]);
  });

  it('changes nothing when one slot is short, and names the longest wait (the first of equals)', () => {
    const slots = [createSlot(5), createSlot(1, 50), createSlot(2, 25), createSlot(0, 50)];
    const refusal: TakeRefusal = { index: -1, waitMs: 0 };
    expect(takeAllOrNone(slots, [1, 2, 4, 1], 4, 0, refusal)).toBe(false);
    expect(refusal).toEqual({ index: 1, waitMs: 50 });
    expect(slots.map((s) => s.units)).toEqual([5, 1, 2, 0]);
  });

  it('refuses with index −1 when no short slot can tell its wait', () => {
    const slots = [createSlot(5), createSlot(1, 0)];
    const refusal: TakeRefusal = { index: 3, waitMs: 3 };
    expect(takeAllOrNone(slots, [1, 2], 2, 0, refusal)).toBe(false);
    expect(refusal).toEqual({ index: -1, waitMs: 0 });
    expect(slots.map((s) => s.units)).toEqual([5, 1]);
  });

  it('decides a single slot the same way', () => {
    const refusal: TakeRefusal = { index: 5, waitMs: 5 };
    const short = createSlot(1, 50);
    expect(takeAllOrNone([short], [3], 1, 0, refusal)).toBe(false);
    expect(refusal).toEqual({ index: 0, waitMs: 100 });
    expect(short.units).toBe(1);
    const unknown = createSlot(1, 0);
    expect(takeAllOrNone([unknown], [3], 1, 0, refusal)).toBe(false);
    expect(refusal).toEqual({ index: -1, waitMs: 0 });
    const enough = createSlot(3);
    expect(takeAllOrNone([enough], [3], 1, 0, refusal)).toBe(true);
    expect(enough.units).toBe(0);
  });

  it('looks only at the first `count` slots (the rest is reused storage)', () => {
    const slots = [createSlot(1), createSlot(2), createSlot(0)];
    expect(takeAllOrNone(slots, [1, 2, 5], 2, 0, { index: 0, waitMs: 0 })).toBe(true);
    expect(slots.map((s) => s.units)).toEqual([0, 0, 0]);
  });
});
