/**
 * Scheduled reconciliation inside `serve` (TOLLGATE_RECONCILE_EVERY; docs/reconciliation.md,
 * "Scheduled runs"): every provider whose admin key is set is compared with the ledger, off the
 * request path, the results stored as `tollgate reconcile` stores them, and a drift beyond the
 * tolerance raised as a `reconcile.drift` alert once per episode (drift.ts, drift-alert.ts).
 *
 * Runs fall on multiples of the interval since the epoch (UTC), on every node at once; the node
 * that claims the interval first (the alert claim store: PostgreSQL on replicas, else Redis, else
 * the SQLite file) runs it and the others skip it. Runs never overlap, a shutdown aborts the one in
 * flight, and a provider whose report fails is logged and skipped, never stopping the others or
 * the proxy.
 */
import type { AlertEvent } from '../alerts/events.js';
import type { PriceTable } from '../estimate/prices.js';
import type { Logger } from '../logger.js';
import type { AlertClaims } from '../storage/alert-claims.js';
import type { LedgerCellSource } from '../storage/ledger-cells.js';
import { driftClaimId, driftEvent } from './drift-alert.js';
import type { ProjectMapping } from './ledger-cells.js';
import type { DayRange, UsageProvider } from './provider.js';
import { runReconcile, type ReconcileResult } from './run.js';
import type { ReconciliationStore } from './store.js';

const DAY_MS = 86_400_000;
/** A drift alert's claim outlives any episode worth alerting on twice (the stored episode says "alerted" anyway). */
const DRIFT_CLAIM_MS = 366 * DAY_MS;

export interface ReconcileScheduleDeps {
  readonly everyMs: number;
  /** Whole UTC days before today compared, and whether today's partial day is too. */
  readonly days: number;
  readonly today: boolean;
  readonly providers: readonly UsageProvider[];
  readonly ledger: LedgerCellSource;
  readonly results: ReconciliationStore;
  /** Who runs an interval (one node of a replica set). */
  readonly claims: AlertClaims;
  /** Where drift alerts go (the alert monitor); undefined without an `alerts` section: none are sent. */
  readonly alerts: { raise(claimId: string, event: AlertEvent, expiresAt: number): Promise<boolean> } | undefined;
  readonly mapping: ProjectMapping | undefined;
  readonly prices: PriceTable;
  readonly tolerancePercent: number;
  /** Clock of the results and the intervals' claims (tests move it by hand). */
  readonly now: () => number;
  /** Real time, for the timer. */
  readonly wallClock?: () => number;
  readonly logger: Logger;
}

/** What one scheduled run did. */
interface ScheduledRun {
  /** False when another node (or an earlier run of this one) had claimed the interval. */
  readonly ran: boolean;
  readonly results: readonly ReconcileResult[];
  /** Providers whose run failed, with the reason (never the admin key). */
  readonly failed: ReadonlyArray<{ readonly provider: string; readonly message: string }>;
}

export interface ReconcileSchedule {
  start(): void;
  /** The run of the current interval, as the timer starts it; joins the one in flight instead of overlapping it. */
  runOnce(): Promise<ScheduledRun>;
  /** Stops the timer and aborts the run in flight. */
  close(): Promise<void>;
}

/** The compared days: the last `days` whole UTC days, and today with `today`. */
export function scheduledRange(now: number, days: number, today: boolean): DayRange {
  const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { since: dayOf(now - days * DAY_MS), until: dayOf(today ? now : now - DAY_MS) };
}

export function createReconcileSchedule(deps: ReconcileScheduleDeps): ReconcileSchedule {
  const { logger } = deps;
  const wallClock = deps.wallClock ?? Date.now;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<ScheduledRun> | undefined;

  async function runProviders(now: number): Promise<ScheduledRun> {
    const range = scheduledRange(now, deps.days, deps.today);
    const results: ReconcileResult[] = [];
    const failed: Array<{ provider: string; message: string }> = [];
    for (const provider of deps.providers) {
      if (abort.signal.aborted) break;
      try {
        const { result } = await runReconcile({
          ledger: deps.ledger,
          results: deps.results,
          provider,
          range,
          mapping: deps.mapping,
          prices: deps.prices,
          tolerancePercent: deps.tolerancePercent,
          now,
          signal: abort.signal,
          onDrift: async (drift, episode, report) => {
            if (deps.alerts === undefined || episode.since === null) return false;
            const claimId = driftClaimId(provider.name, episode.since);
            return deps.alerts.raise(claimId, driftEvent({ drift, episode, report, now }), now + DRIFT_CLAIM_MS);
          },
        });
        results.push(result);
        logger.info(
          { provider: provider.name, since: range.since, until: range.until, differences: result.differences, drift: result.drift },
          'scheduled reconciliation done',
        );
      } catch (error) {
        // A provider's report failing (an expired admin key, its API down) stops neither the other provider nor the proxy.
        const message = (error as Error).message;
        failed.push({ provider: provider.name, message });
        if (abort.signal.aborted) logger.info({ provider: provider.name }, 'scheduled reconciliation stopped at shutdown');
        else logger.warn({ provider: provider.name, message }, 'scheduled reconciliation failed; will try at the next interval');
      }
    }
    return { ran: true, results, failed };
  }

  async function run(): Promise<ScheduledRun> {
    const now = deps.now();
    const slot = Math.floor(now / deps.everyMs);
    let won: boolean;
    try {
      won = await deps.claims.claim(`reconcile.run:${deps.everyMs}:${slot}`, now, (slot + 2) * deps.everyMs);
    } catch (error) {
      logger.warn({ message: (error as Error).message, store: deps.claims.kind }, 'scheduled reconciliation could not be claimed; skipped');
      return { ran: false, results: [], failed: [] };
    }
    if (!won) return { ran: false, results: [], failed: [] };
    const outcome = await runProviders(now);
    await deps.claims.prune(now).catch(() => undefined);
    return outcome;
  }

  function runOnce(): Promise<ScheduledRun> {
    running ??= run().finally(() => (running = undefined));
    return running;
  }

  function schedule(): void {
    if (abort.signal.aborted) return;
    const wall = wallClock();
    timer = setTimeout(
      () => {
        runOnce()
          .catch((error: unknown) => logger.error({ message: (error as Error).message }, 'scheduled reconciliation failed'))
          .finally(schedule);
      },
      (Math.floor(wall / deps.everyMs) + 1) * deps.everyMs - wall,
    );
    timer.unref();
  }

  return {
    start() {
      schedule();
      logger.info({ everyMs: deps.everyMs, providers: deps.providers.map((p) => p.name), claims: deps.claims.kind }, 'scheduled reconciliation on');
    },
    runOnce,
    async close() {
      clearTimeout(timer);
      abort.abort();
      await running?.catch(() => undefined);
    },
  };
}
