/**
 * The drift gauges of /metrics (docs/reconciliation.md, "Drift"), per
 * provider: read at each scrape from the newest stored result of each
 * provider — the shared store on replicas, so every node exports the same
 * values whichever node (or `tollgate reconcile`) ran last. Labels: the
 * provider only, one of a fixed few.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { microsToUsd } from '../domain/money.js';
import { driftOf } from './drift.js';
import { PROVIDERS } from './providers.js';
import type { StoredReconciliation } from './store.js';

const NAMES = {
  usd: 'tollgate_reconcile_drift_usd',
  ratio: 'tollgate_reconcile_drift_ratio',
  lastSuccess: 'tollgate_reconcile_last_success_timestamp_seconds',
} as const;

/** Registers the gauges on `registry` (once: a registry shared by several builds keeps the first). */
export function registerDriftMetrics(registry: Registry, read: () => Promise<readonly StoredReconciliation[]>, logger: Logger): void {
  if (registry.getSingleMetric(NAMES.usd) !== undefined) return;
  const known = new Set<string>(PROVIDERS);
  let latest: Promise<readonly StoredReconciliation[] | undefined> | undefined;
  // One read per scrape, shared by the three gauges; a failed read leaves the gauges as they were.
  const newest = () => {
    latest ??= read()
      .catch((error: unknown) => {
        logger.warn({ message: (error as Error).message }, 'stored reconciliations could not be read for /metrics');
        return undefined;
      })
      .finally(() => setImmediate(() => (latest = undefined)));
    return latest;
  };
  const gauge = (name: string, help: string, value: (stored: StoredReconciliation) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['provider'],
      registers: [registry],
      // Every worker of `serve --workers N` reads the same store: the primary's aggregate takes one, not their sum.
      aggregator: 'first',
      async collect() {
        const stored = await newest();
        if (stored === undefined) return;
        this.reset();
        for (const result of stored) if (known.has(result.report.provider)) this.set({ provider: result.report.provider }, value(result));
      },
    });
  gauge(NAMES.usd, "The provider's bill minus the ledger over the newest reconciliation's days, USD.", (s) => microsToUsd(driftOf(s.report).differenceMicros));
  gauge(NAMES.ratio, "The provider's bill minus the ledger, as a fraction of the larger of the two (the tolerance's measure).", (s) => driftOf(s.report).ratio);
  gauge(NAMES.lastSuccess, 'When the newest reconciliation with the provider ran (stored), seconds since the epoch.', (s) => s.report.generatedAt / 1000);
}
