/**
 * One reconciliation: the ledger's cells and the provider's report over the
 * same whole UTC days, compared, its drift episode carried on from the
 * provider's previous result (src/reconcile/drift.ts), stored (the dashboard
 * shows the newest of each provider), returned.
 */
import { resolvePrice, type PriceTable } from '../estimate/prices.js';
import { compareWithProvider, type ReconcileReport } from './compare.js';
import { hasProjectMapping, readLedgerCells, type ProjectMapping } from './ledger-cells.js';
import type { LedgerCellSource } from '../storage/ledger-cells.js';
import type { DayRange, UsageProvider } from './provider.js';
import type { ReconciliationStore } from './store.js';
import { driftOf, nextEpisode, type Drift, type DriftEpisode } from './drift.js';

export interface ReconcileRun {
  /** Where the ledger is read: the node's file, or PostgreSQL's on a replica (src/storage/ledger-cells.ts). */
  readonly ledger: LedgerCellSource;
  readonly provider: UsageProvider;
  readonly range: DayRange;
  readonly mapping: ProjectMapping | undefined;
  readonly prices: PriceTable;
  readonly tolerancePercent: number;
  readonly now: number;
  readonly signal?: AbortSignal;
  /** Where the result is stored for the dashboard (PostgreSQL on replicas, else the SQLite file). */
  readonly results: ReconciliationStore;
  /**
   * Told of a drift episode not alerted on yet (the proxy's scheduled run raises the alert); true
   * when the alert was raised. Without it (the CLI) the episode is stored as not alerted on.
   */
  readonly onDrift?: (drift: Drift, episode: DriftEpisode, report: ReconcileReport) => Promise<boolean>;
}

export type ReconcileResult = ReconcileReport & { readonly pending: number; readonly drift: DriftEpisode };

const DAY_MS = 86_400_000;

/** `7d` (the last 7 UTC days, today included), `today`, `month` or YYYY-MM-DD, in UTC: the provider's days. */
export function parseUtcDay(text: string, now: number): string {
  const today = new Date(now).toISOString().slice(0, 10);
  const trimmed = text.trim();
  const days = /^(\d+)d$/.exec(trimmed);
  if (days) {
    const n = Number(days[1]);
    if (n < 1 || n > 366) throw new RangeError('--since Nd needs 1 ≤ N ≤ 366');
    return new Date(now - (n - 1) * DAY_MS).toISOString().slice(0, 10);
  }
  if (trimmed === 'today') return today;
  if (trimmed === 'month') return `${today.slice(0, 7)}-01`;
  if (/^\d{4}-\d{2}-\d{2}$/.test(trimmed) && !Number.isNaN(Date.parse(`${trimmed}T00:00:00Z`))) return trimmed;
  throw new RangeError(`"${text}" is not a day (use 7d, today, month or YYYY-MM-DD)`);
}

export async function runReconcile(run: ReconcileRun): Promise<{ id: number; result: ReconcileResult }> {
  if (run.range.since > run.range.until) throw new RangeError(`--since ${run.range.since} is after --until ${run.range.until}`);
  const anthropic = run.provider.name === 'anthropic';
  // Anthropic's workspaces are not the OpenAI projects the mapping names: its cells are compared by day and model.
  const mapping = anthropic ? undefined : run.mapping;
  const byProject = hasProjectMapping(mapping);
  const report = await run.provider.fetchReport(run.range, { byProject, ...(run.signal ? { signal: run.signal } : {}) });
  const { cells, pending } = await readLedgerCells(run.ledger, run.range, mapping, anthropic ? 'anthropic' : 'openai');
  const compared = compareWithProvider(cells, report, {
    provider: run.provider.name,
    since: run.range.since,
    until: run.range.until,
    generatedAt: run.now,
    byProject,
    tolerancePercent: run.tolerancePercent,
    priceOf: (model) => {
      const price = resolvePrice(model, run.prices);
      return price.known ? price : undefined;
    },
  });
  const previous = await run.results.latest(run.provider.name);
  const drift = driftOf(compared);
  let episode = nextEpisode(previous?.report, drift, run.now);
  if (episode.exceeded && !episode.alerted && run.onDrift !== undefined && (await run.onDrift(drift, episode, compared)))
    episode = { ...episode, alerted: true };
  const result: ReconcileResult = { ...compared, pending, drift: episode };
  return { id: await run.results.save(result), result };
}
