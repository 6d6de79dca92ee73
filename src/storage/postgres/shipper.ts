/**
 * The ledger's way to PostgreSQL on a replica. The request path is unchanged:
 * the writer (src/storage/sqlite/ledger-writer.ts) commits each pending row and settlement to the
 * node's own SQLite file, and triggers there queue the request id in a local
 * outbox table in the same transaction (sqlite/outbox.ts). The shipper reads the outbox in
 * order, in batches, and in one PostgreSQL transaction per batch:
 *
 * - inserts rows PostgreSQL does not have, settles rows it holds as pending
 *   (a row is shipped in its current local state; row-counts.ts says what
 *   that changes), and leaves everything else alone — so a row shipped twice,
 *   or a stale pending state after its settlement, counts once;
 * - moves every rollup by the difference of exactly the rows it inserted or
 *   settled, in the same transaction (rollup rows in key order, so nodes
 *   shipping at once never deadlock);
 * - bounds each key's distinct end users and tags of a day over every node
 *   (name-bound.ts): a new row's names past the bound count under
 *   `(other)`, recorded on PostgreSQL's row so its settlement moves the same
 *   rollup rows.
 *
 * Owners of stored responses (src/storage/sqlite/responses.ts) ride along from their
 * own small outbox, in the same loop.
 *
 * Only after that commit are the batch's outbox entries deleted; a crash
 * between the two ships them again, which changes nothing. PostgreSQL down
 * or slow: the batch fails, the outbox grows, and the shipper retries with
 * backoff; the node serves on (README "Running replicas").
 */
import { Gauge, type Registry } from 'prom-client';
import type { TollgateDatabase } from '../sqlite/open.js';
import type { PgPool } from './open.js';
import type { NameBounds } from '../../domain/rollup-names.js';
import { enableOutbox } from '../sqlite/outbox.js';
import { shipResponses, shipRows, type LocalResponse, type LocalRow, type ShipResult } from './ship-rows.js';

export type { ShipResult } from './ship-rows.js';

export interface ShipperOptions {
  /** Most outbox entries per PostgreSQL transaction (default 1000). */
  readonly batch?: number;
  /** How often an empty outbox is looked at again (default 100 ms). */
  readonly idleMs?: number;
  /** Longest wait between attempts while PostgreSQL fails (default 5 s). */
  readonly maxBackoffMs?: number;
  /** Distinct end users and tags per key per day in PostgreSQL's rollups (TOLLGATE_MAX_END_USERS, TOLLGATE_MAX_TAGS). */
  readonly nameBounds?: NameBounds;
  readonly now?: () => number;
  readonly onShipped?: (result: ShipResult) => void;
  readonly onError?: (error: unknown) => void;
}

export class LedgerShipper {
  private readonly pool: PgPool;
  private readonly options: ShipperOptions;
  private readonly batch: number;
  private readonly now: () => number;
  private readonly readBatch;
  private readonly deleteShipped;
  private readonly bounds;
  private readonly readResponses;
  private readonly deleteShippedResponses;
  private readonly responsesWaiting;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ShipResult> | undefined;
  private stopped = true;
  private failures = 0;

  constructor(pool: PgPool, database: TollgateDatabase, options: ShipperOptions = {}) {
    this.pool = pool;
    this.options = options;
    this.batch = options.batch ?? 1000;
    this.now = options.now ?? Date.now;
    enableOutbox(database);
    const sqlite = database.sqlite;
    this.readBatch = sqlite.prepare(
      `SELECT o.seq AS seq, l.* FROM (SELECT seq, request_id FROM ledger_outbox ORDER BY seq LIMIT ?) AS o
       LEFT JOIN ledger AS l ON l.request_id = o.request_id ORDER BY o.seq`,
    );
    this.deleteShipped = sqlite.prepare('DELETE FROM ledger_outbox WHERE seq <= ?');
    this.bounds = sqlite.prepare(
      'SELECT min(seq) AS first, max(seq) AS last, (SELECT queued_at FROM ledger_outbox ORDER BY seq LIMIT 1) AS oldest FROM ledger_outbox',
    );
    this.readResponses = sqlite.prepare(
      `SELECT o.seq AS seq, r.id AS id, r.key_id AS key_id, r.request_id AS request_id, r.created_at AS created_at, r.deleted_at AS deleted_at,
         r.item_of AS item_of, r.billed_tokens AS billed_tokens
       FROM (SELECT seq, id FROM responses_outbox ORDER BY seq LIMIT ?) AS o LEFT JOIN responses AS r ON r.id = o.id ORDER BY o.seq`,
    );
    this.deleteShippedResponses = sqlite.prepare('DELETE FROM responses_outbox WHERE seq <= ?');
    this.responsesWaiting = sqlite.prepare('SELECT count(*) FROM responses_outbox').pluck();
  }

  /** Entries waiting: ledger changes (seqs are contiguous: the outbox only ever loses a prefix) and response owners (a few). */
  depth(): number {
    const b = this.bounds.get() as { first: number | null; last: number | null };
    return (b.first === null || b.last === null ? 0 : b.last - b.first + 1) + (this.responsesWaiting.get() as number);
  }

  /** Age of the oldest entry waiting, ms (0 when nothing waits). */
  lagMs(): number {
    const b = this.bounds.get() as { oldest: number | null };
    return b.oldest === null ? 0 : Math.max(0, this.now() - b.oldest);
  }

  /** Ships one batch (or waits for the one under way). */
  shipOnce(): Promise<ShipResult> {
    if (this.running !== undefined) return this.running;
    const run = (async () => {
      const rows = this.readBatch.all(this.batch) as LocalRow[];
      const owners = this.readResponses.all(this.batch) as LocalResponse[];
      if (rows.length === 0 && owners.length === 0) return { entries: 0, inserted: 0, settled: 0, changes: [] };
      let changed: Omit<ShipResult, 'entries'> = { inserted: 0, settled: 0, changes: [] };
      if (rows.length > 0) {
        changed = await shipRows(this.pool, rows, this.options.nameBounds);
        this.deleteShipped.run(rows[rows.length - 1]!.seq);
      }
      let ownersShipped = 0;
      if (owners.length > 0) {
        // Apart from the ledger's: owners PostgreSQL refuses wait and are retried, and never hold the ledger back.
        try {
          await shipResponses(this.pool, owners);
          this.deleteShippedResponses.run(owners[owners.length - 1]!.seq);
          ownersShipped = owners.length;
        } catch (error) {
          if (rows.length === 0) throw error;
          this.options.onError?.(error);
        }
      }
      const result = { entries: rows.length + ownersShipped, ...changed };
      this.options.onShipped?.(result);
      return result;
    })();
    // Cleared once settled (not inside the body, which may finish before this assignment).
    this.running = run;
    void run.then(
      () => this.clearRunning(run),
      () => this.clearRunning(run),
    );
    return run;
  }

  private clearRunning(run: Promise<ShipResult>): void {
    if (this.running === run) this.running = undefined;
  }

  /** Ships until the outbox is empty; rejects on the first failure. */
  async drain(): Promise<void> {
    while ((await this.shipOnce()).entries > 0);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    try {
      const result = await this.shipOnce();
      this.failures = 0;
      this.schedule(result.entries >= this.batch ? 0 : (this.options.idleMs ?? 100));
    } catch (error) {
      this.failures += 1;
      this.options.onError?.(error);
      const backoff = Math.min(this.options.maxBackoffMs ?? 5000, 100 * 2 ** Math.min(this.failures, 10));
      this.schedule(backoff);
    }
  }

  /** Stops the loop after the batch under way; with `drainWithinMs`, first tries to ship what is left for that long. */
  async stop(drainWithinMs = 0): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
    if (drainWithinMs > 0) {
      const deadline = this.now() + drainWithinMs;
      try {
        while (this.now() < deadline && (await this.shipOnce()).entries > 0);
      } catch (error) {
        // What is left ships when the node starts again.
        this.options.onError?.(error);
      }
    }
  }
}

/** The outbox's depth and lag as gauges, read at scrape time. */
export function registerShipperMetrics(registry: Registry, shipper: LedgerShipper): void {
  new Gauge({
    name: 'tollgate_outbox_depth',
    help: 'Ledger changes (and owners of stored responses) recorded locally and not yet shipped to PostgreSQL.',
    registers: [registry],
    collect() {
      this.set(shipper.depth());
    },
  });
  new Gauge({
    name: 'tollgate_outbox_lag_seconds',
    help: 'Age of the oldest ledger change not yet shipped to PostgreSQL (0 when none waits).',
    registers: [registry],
    collect() {
      this.set(shipper.lagMs() / 1000);
    },
  });
}
