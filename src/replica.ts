/**
 * A node of a replicated Tollgate (TOLLGATE_DATABASE_URL): PostgreSQL
 * migrated, the node's copy of keys kept current (src/storage/postgres/key-sync.ts) and
 * its ledger outbox shipped (src/storage/postgres/shipper.ts). Nothing here is on the
 * request path, and nothing here stops the node from serving: while
 * PostgreSQL is unreachable, connecting is retried in the background.
 */
import type { Registry } from 'prom-client';
import { PostgresSpendSource } from './storage/postgres/spend-source.js';
import { KeySync } from './storage/postgres/key-sync.js';
import { pruneLedger } from './storage/postgres/retention.js';
import { LedgerShipper, registerShipperMetrics } from './storage/postgres/shipper.js';
import type { Logger } from './logger.js';
import type { TollgateDatabase } from './storage/sqlite/open.js';
import { migratePg, openPg, type PgPool } from './storage/postgres/open.js';
import type { NameBounds } from './domain/rollup-names.js';

export interface ReplicaOptions {
  readonly url: string;
  readonly logger: Logger;
  /** Called when the node's copy of keys changed (the key cache refreshes). */
  readonly onKeysChanged: () => void;
  readonly registry?: Registry;
  /** How long `start()` waits for PostgreSQL before the node serves from its copy (default 5 s). */
  readonly startWaitMs?: number;
  /** Days of raw ledger rows PostgreSQL keeps (pruned hourly by one node at a time); undefined = all. */
  readonly retentionDays?: number | undefined;
  /** Distinct end users and tags per key per day in PostgreSQL's rollups (src/storage/postgres/name-bound.ts). */
  readonly nameBounds?: NameBounds;
}

export interface Replica {
  readonly pool: PgPool;
  readonly keySync: KeySync;
  readonly shipper: LedgerShipper;
  /** Budgets across nodes (the SpendTracker's source). */
  readonly spend: PostgresSpendSource;
  /** Connects (migrating first) and starts the background work; waits at most startWaitMs for a first key pull. */
  start(): Promise<void>;
  /** Stops the background work, shipping what is left for up to `drainMs`, and closes the pool. */
  close(drainMs?: number): Promise<void>;
}

export function createReplica(database: TollgateDatabase, options: ReplicaOptions): Replica {
  const { logger } = options;
  // Each failing loop says so once per outage, not once per attempt.
  let pgDown = false;
  let syncDown = false;
  const pool = openPg(options.url, { onError: (error) => logger.warn({ message: (error as Error).message }, 'PostgreSQL connection error') });
  const keySync = new KeySync(pool, database, {
    url: options.url,
    onChange: () => {
      if (syncDown) logger.info('key sync from PostgreSQL resumed');
      syncDown = false;
      options.onKeysChanged();
    },
    onError: (error) => {
      if (!syncDown) logger.warn({ message: (error as Error).message }, 'key sync from PostgreSQL failed; serving keys from the local copy, retrying');
      syncDown = true;
    },
  });
  const spend = new PostgresSpendSource(pool, database, {
    onError: (error) => logger.debug({ message: (error as Error).message }, 'budget read from PostgreSQL failed; the last answer stands'),
  });
  const shipper = new LedgerShipper(pool, database, {
    ...(options.nameBounds === undefined ? {} : { nameBounds: options.nameBounds }),
    onShipped: (result) => {
      spend.shippedBatch(result.changes);
      if (pgDown) logger.info('ledger shipping to PostgreSQL resumed');
      pgDown = false;
    },
    onError: (error) => {
      if (!pgDown) logger.warn({ message: (error as Error).message }, 'ledger shipping to PostgreSQL failed; the outbox keeps the rows, retrying');
      pgDown = true;
    },
  });
  if (options.registry !== undefined) registerShipperMetrics(options.registry, shipper);

  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let pruning: NodeJS.Timeout | undefined;
  let snapshots: NodeJS.Timeout | undefined;
  const prune = (days: number) => {
    pruneLedger(pool, days, Date.now()).then(
      (deleted) => deleted > 0 && logger.info({ deleted, days }, 'old ledger rows pruned from PostgreSQL (rollups kept)'),
      (error: unknown) => logger.warn({ message: (error as Error).message }, 'pruning old ledger rows failed; retrying in an hour'),
    );
  };
  let wake: (() => void) | undefined;

  const connect = async (): Promise<void> => {
    for (let attempt = 0; !stopped; attempt += 1) {
      try {
        const applied = await migratePg(pool);
        if (applied > 0) logger.info({ applied }, 'PostgreSQL migrated');
        await keySync.pull();
        // Budgets' first reads count every node from the start (src/storage/postgres/spend-source.ts).
        await spend.loadAll();
        if (stopped) return;
        keySync.start();
        shipper.start();
        snapshots = setInterval(() => {
          spend.loadAll().catch((error: unknown) => logger.debug({ message: (error as Error).message }, 'budget snapshot from PostgreSQL failed'));
        }, 10_000);
        snapshots.unref();
        const days = options.retentionDays;
        if (days !== undefined) {
          prune(days);
          pruning = setInterval(() => prune(days), 3_600_000);
          pruning.unref();
        }
        return;
      } catch (error) {
        logger.warn({ message: (error as Error).message, attempt }, 'PostgreSQL unreachable; serving from the local copy and retrying');
        await new Promise<void>((resolve) => {
          wake = resolve;
          retry = setTimeout(resolve, Math.min(5000, 250 * 2 ** Math.min(attempt, 5)));
          retry.unref();
        });
      }
    }
  };

  let connecting: Promise<void> | undefined;
  return {
    pool,
    keySync,
    shipper,
    spend,
    async start() {
      connecting = connect();
      const waitMs = options.startWaitMs ?? 5000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([connecting, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
      clearTimeout(timer);
    },
    async close(drainMs = 2000) {
      stopped = true;
      if (retry !== undefined) clearTimeout(retry);
      if (pruning !== undefined) clearInterval(pruning);
      if (snapshots !== undefined) clearInterval(snapshots);
      wake?.();
      await connecting;
      await keySync.stop();
      await shipper.stop(drainMs);
      await pool.end();
    },
  };
}
