/**
 * The log line's `time` field (src/logger.ts, isoTimeAt) is what pino's own ISO time function
 * writes, for any instant, in any order of calls (it remembers the last second it formatted).
 */
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { isoTimeAt } from '../../src/logger.js';

const isoField = (ms: number): string => `,"time":"${new Date(ms).toISOString()}"`;

describe('the log time field', () => {
  it("matches pino's isoTime for any sequence of instants, near and far apart (property)", () => {
    const base = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2099-12-31T23:59:59Z') });
    fc.assert(
      fc.property(base, fc.array(fc.integer({ min: -2_500, max: 2_500 }), { maxLength: 40 }), (start, steps) => {
        let ms = start;
        expect(isoTimeAt(ms)).toBe(isoField(ms));
        for (const step of steps) {
          ms += step;
          expect(isoTimeAt(ms)).toBe(isoField(ms));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('writes the field the way pino.stdTimeFunctions.isoTime does now', () => {
    const now = Date.now();
    const ours = isoTimeAt(now);
    expect(ours).toMatch(/^,"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"$/);
    // pino's reads the clock itself: the same up to the second's fraction.
    expect(pino.stdTimeFunctions.isoTime().slice(0, 20)).toBe(ours.slice(0, 20));
  });
});
