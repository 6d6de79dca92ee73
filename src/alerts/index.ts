/**
 * Alerts, assembled: the monitor that decides (monitor.ts), the claim store
 * that makes each alert fire once across processes (claims.ts), the outbox
 * (outbox.ts) and the deliverer (deliver.ts). Built by the composition root
 * when the config file has an `alerts` section.
 */
import Database from 'better-sqlite3';
import type { Cluster, Redis } from 'ioredis';
import type { SpendTracker } from '../budgets/spend-tracker.js';
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import type { Backend } from '../storage/backend.js';
import { openAlertClaims } from '../storage/index.js';
import type { Logger } from '../logger.js';
import type { FinishedListener } from '../pipeline/finished.js';
import { redisClaims, type AlertClaims } from './claims.js';
import { AlertDeliverer } from './deliver.js';
import { AlertMonitor, type MonitorDeps } from './monitor.js';
import { AlertOutbox } from './outbox.js';
import type { AlertSettings } from './settings.js';
import { AlertSpendReads } from './spend-reads.js';

export interface AlertsDeps {
  readonly settings: AlertSettings;
  readonly database: TollgateDatabase;
  readonly spend: SpendTracker;
  readonly logger: Logger;
  readonly now: () => number;
  readonly redis?: Redis | Cluster | undefined;
  /** Where claims are shared: PostgreSQL on a replica (src/storage/alert-claims.ts). */
  readonly backend: Backend;
  /** The runaway stop's key store and this node's view of keys (with `settings.runaway`). */
  readonly runaway?: MonitorDeps['runaway'];
  /** How often noted owners are evaluated (default 1 s). */
  readonly evaluateEveryMs?: number;
}

export interface Alerts {
  /** Subscribe to the pipeline's finished events. */
  readonly listener: FinishedListener;
  readonly monitor: AlertMonitor;
  readonly outbox: AlertOutbox;
  readonly claims: AlertClaims;
  start(): void;
  close(): Promise<void>;
}

/** Busy wait of the alerts' own connection: a write that finds the file locked gives up and is retried later, never stalling the event loop. */
const ALERTS_BUSY_MS = 20;
const PRUNE_EVERY_MS = 3_600_000;

export function createAlerts(deps: AlertsDeps): Alerts {
  const { settings, logger } = deps;
  // Alert writes use their own connection with a short busy timeout, so a long
  // commit of another process delays an alert, never a request.
  const own = deps.database.path === ':memory:' ? undefined : new Database(deps.database.path);
  if (own !== undefined) {
    own.pragma(`busy_timeout = ${ALERTS_BUSY_MS}`);
    own.pragma('foreign_keys = ON');
  }
  const sqlite = own ?? deps.database.sqlite;
  const claims = openAlertClaims(deps.backend, { connection: sqlite, shared: deps.redis === undefined ? undefined : redisClaims(deps.redis) });
  const outbox = new AlertOutbox(sqlite, settings.maxPending);
  const deliverer = new AlertDeliverer({ outbox, settings, logger });
  const monitor = new AlertMonitor({
    settings,
    spend: deps.spend,
    reads: new AlertSpendReads(deps.database.sqlite),
    claims,
    outbox,
    now: deps.now,
    logger,
    onEnqueued: () => deliverer.kick(),
    runaway: deps.runaway,
  });
  let timer: NodeJS.Timeout | undefined;
  let lastPrune = 0;
  let ticking: Promise<void> | undefined;
  const tick = async () => {
    try {
      await monitor.tick();
      // The clock the claims and the outbox rows were stamped with (the reconciler's run claims too):
      // pruned by another, a claim could lapse early and its interval run twice.
      const now = deps.now();
      if (now - lastPrune >= PRUNE_EVERY_MS) {
        lastPrune = now;
        outbox.prune(now);
        await claims.prune(now);
      }
    } catch (error) {
      logger.warn({ message: (error as Error).message }, 'alert check failed; will look again');
    }
  };
  return {
    listener: monitor.listener,
    monitor,
    outbox,
    claims,
    start() {
      deliverer.start();
      timer = setInterval(() => {
        // One tick at a time: a slow claim store (Redis timing out) does not pile ticks up.
        if (ticking !== undefined || !monitor.hasNoted) return;
        ticking = tick().finally(() => (ticking = undefined));
      }, deps.evaluateEveryMs ?? 1000);
      timer.unref();
      logger.info({ webhooks: settings.webhooks.map((hook) => hook.name), claims: claims.kind }, 'alerts on');
    },
    async close() {
      clearInterval(timer);
      // The last requests' alerts are decided before the deliveries stop.
      await ticking;
      await tick();
      await deliverer.close();
      own?.close();
    },
  };
}
