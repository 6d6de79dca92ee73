import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { base36, newRequestId } from '../../src/request-id.js';

describe('request ids', () => {
  it('writes the sequence and the time as toString(36) padded to their widths would (property)', () => {
    const edges = [0, 35, 36, 1295, 1296, 46_655, 46_656, 1_679_615, 1_679_616, 0xffffff];
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 0xffffff }), fc.constantFrom(...edges)), (n) => {
        expect(base36(n, 5)).toBe(n.toString(36).padStart(5, '0'));
      }),
    );
    // Milliseconds since the epoch, from 1973 (eight digits) to 2059 (36^8 - 1).
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 36 ** 7, max: 36 ** 8 - 1 }), fc.constantFrom(36 ** 7, 36 ** 8 - 1, Date.now())), (ms) => {
        expect(base36(ms, 8)).toBe(ms.toString(36));
      }),
    );
  });

  it('are unique, in the order they were made, and carry the time they were made at', () => {
    const before = Date.now();
    const ids = Array.from({ length: 5000 }, () => newRequestId());
    const after = Date.now();
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) {
      const match = /^req_([0-9a-z]{8})([0-9a-f]{12})([0-9a-z]{5})$/.exec(id);
      expect(match).not.toBeNull();
      const madeAt = parseInt(match![1]!, 36);
      expect(madeAt).toBeGreaterThanOrEqual(before);
      expect(madeAt).toBeLessThanOrEqual(after);
    }
  });
});
