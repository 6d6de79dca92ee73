/**
 * The proxy's reconciliation parts, built from the config by the composition
 * root (src/tollgate.ts): the drift gauges of /metrics, always; the scheduled
 * runs when TOLLGATE_RECONCILE_EVERY is set and a provider's admin key is.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import { redisClaims } from '../alerts/claims.js';
import type { Alerts } from '../alerts/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { openAlertClaims, openLedgerCells, type Backend } from '../storage/index.js';
import { registerDriftMetrics } from './drift-metrics.js';
import { configuredProviders } from './providers.js';
import { createReconcileSchedule, type ReconcileSchedule } from './schedule.js';

export type { ReconcileSchedule } from './schedule.js';
import type { ReconciliationStore } from './store.js';

export function buildReconciliation(
  config: Config,
  deps: {
    readonly backend: Backend;
    readonly limiter: { readonly redis?: Redis | Cluster | undefined };
    /** Where results are kept: the shared store (PostgreSQL on replicas). */
    readonly shared: { readonly reconciliations: ReconciliationStore };
    readonly alerts: Alerts | undefined;
    readonly metrics: { readonly registry: Registry };
    readonly logger: Logger;
    readonly now: () => number;
  },
): ReconcileSchedule | undefined {
  const results = deps.shared.reconciliations;
  registerDriftMetrics(deps.metrics.registry, () => results.latestPerProvider(), deps.logger);
  const { schedule } = config.reconcile;
  const providers = configuredProviders(config);
  if (schedule.everyMs === undefined) return undefined;
  if (providers.length === 0) {
    deps.logger.warn('TOLLGATE_RECONCILE_EVERY is set but no provider admin key is: no scheduled reconciliation');
    return undefined;
  }
  return createReconcileSchedule({
    everyMs: schedule.everyMs,
    days: schedule.days,
    today: schedule.today,
    providers,
    // On a replica, every node's rows (PostgreSQL's ledger), not this node's share.
    ledger: openLedgerCells(deps.backend),
    results,
    claims: openAlertClaims(deps.backend, { shared: deps.limiter.redis === undefined ? undefined : redisClaims(deps.limiter.redis, 'tg:reconcile:') }),
    alerts: deps.alerts?.monitor,
    mapping: config.reconcile.projects,
    prices: config.prices,
    tolerancePercent: config.reconcile.tolerancePercent,
    now: deps.now,
    logger: deps.logger,
  });
}
