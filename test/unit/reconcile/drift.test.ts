/**
 * Drift (src/reconcile/drift.ts): the ledger's total against the bill's, and
 * the episodes a drift alert is sent once for.
 */
import { describe, expect, it } from 'vitest';
import { driftOf, nextEpisode, type Drift } from '../../../src/reconcile/drift.js';
import { scheduledRange } from '../../../src/reconcile/schedule.js';

const side = (costMicros: number, requests = 10) => ({ requests, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costMicros });
const totals = (ledger: number, bill: number, tolerancePercent = 1, requests = 10) => ({
  tolerancePercent,
  totals: { ledger: side(ledger, requests), provider: side(bill, requests) },
});

describe('the drift of a result', () => {
  it('is the bill minus the ledger, over the larger side', () => {
    expect(driftOf(totals(1_000_000, 1_500_000))).toEqual({
      ledgerMicros: 1_000_000,
      billMicros: 1_500_000,
      differenceMicros: 500_000,
      ratio: 1 / 3,
      exceeded: true,
    });
    expect(driftOf(totals(2_000_000, 1_000_000))).toMatchObject({ differenceMicros: -1_000_000, ratio: -0.5, exceeded: true });
    expect(driftOf(totals(0, 0))).toMatchObject({ differenceMicros: 0, ratio: 0, exceeded: false });
  });

  it('stays within the tolerance up to its percent, or a micro-dollar per request', () => {
    expect(driftOf(totals(1_000_000, 1_010_000)).exceeded).toBe(false);
    expect(driftOf(totals(1_000_000, 1_010_102)).exceeded).toBe(true);
    // 40 requests of a few micro-dollars, each rounded up by the ledger: not a drift.
    expect(driftOf(totals(200, 165, 1, 40)).exceeded).toBe(false);
    expect(driftOf(totals(200, 159, 1, 40)).exceeded).toBe(true);
  });
});

describe('drift episodes', () => {
  const over: Drift = { ledgerMicros: 1, billMicros: 2, differenceMicros: 1, ratio: 0.5, exceeded: true };
  const within: Drift = { ...over, billMicros: 1, differenceMicros: 0, ratio: 0, exceeded: false };
  const previous = (exceeded: boolean, since: number | null, alerted: boolean, generatedAt = 100) => ({
    ...totals(1, 1),
    generatedAt,
    drift: { exceeded, since, alerted },
  });

  it('begins at the first result beyond the tolerance, not yet alerted on', () => {
    expect(nextEpisode(undefined, over, 500)).toEqual({ exceeded: true, since: 500, alerted: false });
    expect(nextEpisode(previous(false, null, false), over, 500)).toEqual({ exceeded: true, since: 500, alerted: false });
  });

  it('goes on, with its start and whether it was alerted on, while results stay beyond it', () => {
    expect(nextEpisode(previous(true, 100, true), over, 500)).toEqual({ exceeded: true, since: 100, alerted: true });
    expect(nextEpisode(previous(true, 100, false), over, 500)).toEqual({ exceeded: true, since: 100, alerted: false });
  });

  it('ends at the first result within the tolerance; the next drift is a new episode', () => {
    expect(nextEpisode(previous(true, 100, true), within, 500)).toEqual({ exceeded: false, since: null, alerted: false });
  });

  it('counts a result stored before episodes were kept by its own totals', () => {
    const old = { ...totals(1_000_000, 2_000_000), generatedAt: 42 };
    expect(nextEpisode(old, over, 500)).toEqual({ exceeded: true, since: 42, alerted: false });
    expect(nextEpisode({ ...totals(1, 1), generatedAt: 42 }, over, 500)).toEqual({ exceeded: true, since: 500, alerted: false });
  });
});

describe('the days a scheduled run compares', () => {
  const now = Date.parse('2026-11-26T09:30:00Z');
  it('are the last N whole UTC days and today, or without today', () => {
    expect(scheduledRange(now, 7, true)).toEqual({ since: '2026-11-19', until: '2026-11-26' });
    expect(scheduledRange(now, 1, false)).toEqual({ since: '2026-11-25', until: '2026-11-25' });
  });
});
