/**
 * Drift: how far the ledger's total is from the provider's bill over a
 * reconciliation's range, and whether that is a new episode to alert on.
 * Pure: the previous stored result comes in as an argument.
 *
 * - The difference is bill − ledger (positive: the provider billed more than
 *   the ledger recorded). The ratio is that over the larger side, the way the
 *   tolerance is applied to every cell (src/reconcile/compare.ts): 0 when
 *   both are 0, between −1 and 1 otherwise.
 * - It exceeds the tolerance as a cell's USD does: more than the tolerance's
 *   percent of the larger side and more than one micro-dollar per request
 *   (the ledger rounds each request up to the micro-dollar).
 * - An episode is the run of a provider's consecutive results that exceed it,
 *   whatever their range (a sliding "last 7 days" moves every day): it starts
 *   at the first such result and ends at the first one within the tolerance.
 *   It is alerted on once (docs/reconciliation.md, "Drift").
 */
import { agrees, type ReconcileReport } from './compare.js';

/** The totals' difference. Money in integer micro-USD. */
export interface Drift {
  readonly ledgerMicros: number;
  readonly billMicros: number;
  /** bill − ledger. */
  readonly differenceMicros: number;
  /** difference ÷ the larger side (0 when both are 0). */
  readonly ratio: number;
  readonly exceeded: boolean;
}

/** What a stored result remembers of its drift episode, for the next run. */
export interface DriftEpisode {
  readonly exceeded: boolean;
  /** When the episode began (the `generatedAt` of its first result); null within the tolerance. */
  readonly since: number | null;
  /** Whether the episode was alerted on. */
  readonly alerted: boolean;
}

type Totals = Pick<ReconcileReport, 'totals' | 'tolerancePercent'>;

/** The ledger's total against the bill's. */
export function driftOf(report: Totals): Drift {
  const { ledger, provider } = report.totals;
  const differenceMicros = provider.costMicros - ledger.costMicros;
  const larger = Math.max(Math.abs(provider.costMicros), Math.abs(ledger.costMicros));
  const slack = Math.max(ledger.requests, provider.requests);
  return {
    ledgerMicros: ledger.costMicros,
    billMicros: provider.costMicros,
    differenceMicros,
    ratio: larger === 0 ? 0 : differenceMicros / larger,
    exceeded: !agrees(ledger.costMicros, provider.costMicros, report.tolerancePercent, slack),
  };
}

/**
 * The episode a new result belongs to, from the provider's previous stored result (`previous`:
 * its report, undefined for the first run). A previous result stored without an episode (before
 * drift was tracked) counts by its own totals, not yet alerted on.
 */
export function nextEpisode(previous: (Totals & { generatedAt: number; drift?: DriftEpisode }) | undefined, current: Drift, generatedAt: number): DriftEpisode {
  if (!current.exceeded) return { exceeded: false, since: null, alerted: false };
  if (previous === undefined) return { exceeded: true, since: generatedAt, alerted: false };
  const before = previous.drift ?? { exceeded: driftOf(previous).exceeded, since: previous.generatedAt, alerted: false };
  if (!before.exceeded) return { exceeded: true, since: generatedAt, alerted: false };
  return { exceeded: true, since: before.since ?? previous.generatedAt, alerted: before.alerted };
}
