/**
 * The ledger's way to PostgreSQL on a replica. The request path is unchanged:
 * the writer (writer.ts) commits each pending row and settlement to the
 * node's own SQLite file, and triggers there queue the request id in a local
 * outbox table in the same transaction. The shipper reads the outbox in
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
 *   (pg-name-bound.ts): a new row's names past the bound count under
 *   `(other)`, recorded on PostgreSQL's row so its settlement moves the same
 *   rollup rows.
 *
 * Owners of stored responses (src/responses/store.ts) ride along from their
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
import { calendarDay } from '../../domain/calendar.js';
import type { SpendChange } from '../../budgets/spend-tracker.js';
import { decodeTags } from '../../endusers/attribution.js';
import { DEFAULT_NAME_BOUNDS, type NameBounds } from '../../domain/rollup-names.js';
import { planNames } from './name-bound.js';
import { countsDelta, transition, type LedgerState, type RowCounts } from '../row-counts.js';
import { RollupSums } from './shipper-rollups.js';

/** Creates the local outbox and its triggers; the first time, queues every row already in the file. */
export function enableOutbox(database: TollgateDatabase): void {
  const sqlite = database.sqlite;
  sqlite
    .transaction(() => {
      sqlite.exec(`
        CREATE TABLE IF NOT EXISTS replica_state (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS ledger_outbox (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          request_id TEXT NOT NULL,
          -- 1 for a new row, 0 for a settlement: while a row's 1 waits, PostgreSQL has none of it (src/budgets/pg-spend.ts).
          is_new INTEGER NOT NULL,
          queued_at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS ledger_outbox_request ON ledger_outbox (request_id);
        CREATE TRIGGER IF NOT EXISTS ledger_outbox_insert AFTER INSERT ON ledger BEGIN
          INSERT INTO ledger_outbox (request_id, is_new, queued_at) VALUES (NEW.request_id, 1, CAST(unixepoch('subsec') * 1000 AS INTEGER));
        END;
        CREATE TRIGGER IF NOT EXISTS ledger_outbox_settle AFTER UPDATE OF status ON ledger WHEN NEW.status <> OLD.status BEGIN
          INSERT INTO ledger_outbox (request_id, is_new, queued_at) VALUES (NEW.request_id, 0, CAST(unixepoch('subsec') * 1000 AS INTEGER));
        END;`);
      const enabled = sqlite.prepare(`SELECT value FROM replica_state WHERE name = 'outbox_enabled'`).get();
      if (enabled === undefined) {
        sqlite.exec(
          `INSERT INTO ledger_outbox (request_id, is_new, queued_at) SELECT request_id, 1, CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM ledger ORDER BY created_at`,
        );
        sqlite.exec(`INSERT INTO replica_state (name, value) VALUES ('outbox_enabled', 1)`);
      }
      // Who owns each stored response, and its deletion, for every node (src/responses/store.ts).
      sqlite.exec(`
        CREATE TABLE IF NOT EXISTS responses_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL);
        CREATE TRIGGER IF NOT EXISTS responses_outbox_insert AFTER INSERT ON responses BEGIN
          INSERT INTO responses_outbox (id) VALUES (NEW.id);
        END;
        CREATE TRIGGER IF NOT EXISTS responses_outbox_delete AFTER UPDATE OF deleted_at ON responses WHEN NEW.deleted_at IS NOT OLD.deleted_at BEGIN
          INSERT INTO responses_outbox (id) VALUES (NEW.id);
        END;
        CREATE TRIGGER IF NOT EXISTS responses_outbox_billed AFTER UPDATE OF billed_tokens ON responses WHEN NEW.billed_tokens IS NOT OLD.billed_tokens BEGIN
          INSERT INTO responses_outbox (id) VALUES (NEW.id);
        END;`);
      // Its own flag: a node whose ledger outbox predates this one queues its responses too.
      if (sqlite.prepare(`SELECT value FROM replica_state WHERE name = 'responses_outbox_enabled'`).get() === undefined) {
        sqlite.exec(`INSERT INTO responses_outbox (id) SELECT id FROM responses ORDER BY created_at`);
        sqlite.exec(`INSERT INTO replica_state (name, value) VALUES ('responses_outbox_enabled', 1)`);
      }
    })
    .immediate();
}

/**
 * A node that is no longer a replica stops queueing (the triggers go). Should
 * it become one again, it queues its whole ledger again: PostgreSQL keeps
 * what it has, so only what it lacks counts.
 */
export function disableOutbox(database: TollgateDatabase): void {
  const sqlite = database.sqlite;
  const exists = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_outbox'`).get();
  if (exists === undefined) return;
  sqlite
    .transaction(() => {
      sqlite.exec(`DROP TRIGGER IF EXISTS ledger_outbox_insert; DROP TRIGGER IF EXISTS ledger_outbox_settle; DELETE FROM ledger_outbox;
        DELETE FROM replica_state WHERE name = 'outbox_enabled';
        DROP TRIGGER IF EXISTS responses_outbox_insert; DROP TRIGGER IF EXISTS responses_outbox_delete; DROP TRIGGER IF EXISTS responses_outbox_billed;
        DROP TABLE IF EXISTS responses_outbox;
        DELETE FROM replica_state WHERE name = 'responses_outbox_enabled';`);
    })
    .immediate();
}

/** The ledger row as SQLite holds it. */
interface LocalRow extends LedgerState {
  readonly seq: number;
  readonly request_id: string | null;
  readonly key_id: string;
  readonly tenant_id: string | null;
  readonly completed_at: number | null;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: number;
  readonly http_status: number | null;
  readonly price_known: number;
  readonly usage_source: string | null;
  readonly latency_ms: number | null;
  readonly ttft_ms: number | null;
  readonly upstream_request_id: string | null;
  readonly end_user: string | null;
  /** Comma-joined, as the writer stores them (src/endusers/attribution.ts). */
  readonly tags: string | null;
  /** The node's own name-bound decision and exact names (src/endusers/rollup-names.ts). */
  readonly rollup_folded: number | null;
  readonly rollup_exact: number | null;
}

type HeldRow = LedgerState & { readonly request_id: string; readonly rollup_folded: number | null };

const STATE_COLUMNS =
  'request_id, status, created_at, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, cost_micros, error_code, rollup_folded';

/** A row as PostgreSQL's `json_populate_recordset(null::ledger, …)` reads it, with PostgreSQL's own name-bound decision. */
function toPgRow(row: LocalRow, folded?: number): Record<string, unknown> {
  const { seq: _seq, stream, price_known, rollup_exact: _exact, ...rest } = row;
  return { ...rest, stream: stream === 1, price_known: price_known === 1, rollup_folded: folded === undefined || folded === 0 ? null : folded };
}

export interface ShipResult {
  /** Outbox entries handled (shipped or found already shipped; response owners included). */
  readonly entries: number;
  /** Rows PostgreSQL did not have. */
  readonly inserted: number;
  /** Rows PostgreSQL held as pending and now holds settled. */
  readonly settled: number;
  /** What the batch added to PostgreSQL's spend (budgets count it until their next read: src/budgets/pg-spend.ts). */
  readonly changes: readonly SpendChange[];
}

/**
 * Ships `rows` (their current local state) in one transaction; returns what
 * changed. Exported for the tests, which ship the same rows twice.
 */
export async function shipRows(pool: PgPool, rows: readonly LocalRow[], bounds: NameBounds = DEFAULT_NAME_BOUNDS): Promise<Omit<ShipResult, 'entries'>> {
  const candidates = new Map<string, LocalRow>();
  for (const row of rows) if (row.request_id !== null) candidates.set(row.request_id, row);
  if (candidates.size === 0) return { inserted: 0, settled: 0, changes: [] };
  const changes: SpendChange[] = [];
  const note = (row: LocalRow, delta: RowCounts) => {
    if (delta.costMicros !== 0)
      changes.push({
        keyId: row.key_id,
        tenantId: row.tenant_id,
        day: calendarDay(row.created_at),
        microUsd: delta.costMicros,
        endUser: row.end_user,
        tags: decodeTags(row.tags),
      });
  };
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Rows older than the retention horizon are not shipped: PostgreSQL may have had and pruned them (retention.ts).
    const horizon = await client.query<{ pruned_before: number }>('SELECT pruned_before FROM ledger_retention WHERE id = 1 FOR SHARE');
    const prunedBefore = horizon.rows[0]?.pruned_before ?? 0;
    const byId = new Map([...candidates].filter(([, row]) => row.created_at >= prunedBefore));
    const ids = [...byId.keys()].sort();
    const held = new Map<string, HeldRow>();
    const lock = async (which: readonly string[]) => {
      const result = await client.query<HeldRow>(`SELECT ${STATE_COLUMNS} FROM ledger WHERE request_id = ANY($1::text[]) ORDER BY request_id FOR UPDATE`, [
        which,
      ]);
      for (const row of result.rows) held.set(row.request_id, row);
    };
    await lock(ids);
    const sums = new RollupSums();
    const toInsert = ids.filter((id) => transition(held.get(id), byId.get(id)!) === 'insert');
    let inserted = 0;
    if (toInsert.length > 0) {
      const names = await planNames(
        client,
        toInsert.map((id) => {
          const row = byId.get(id)!;
          return { ...row, request_id: id, day: calendarDay(row.created_at), tags: decodeTags(row.tags) };
        }),
        bounds,
      );
      const result = await client.query<{ request_id: string }>(
        `INSERT INTO ledger SELECT * FROM json_populate_recordset(null::ledger, $1::json) ORDER BY request_id ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
        [JSON.stringify(toInsert.map((id) => toPgRow(byId.get(id)!, names.folded.get(id))))],
      );
      const done = new Set(result.rows.map((r) => r.request_id));
      inserted = done.size;
      await names.record(client, done);
      for (const id of done) {
        const delta = countsDelta(undefined, byId.get(id)!);
        sums.add(byId.get(id)!, delta, names.folded.get(id) ?? 0);
        note(byId.get(id)!, delta);
      }
      // Another shipper of the same file inserted these first: treat them as held.
      const raced = toInsert.filter((id) => !done.has(id));
      if (raced.length > 0) await lock(raced);
    }
    const toSettle = ids.filter((id) => held.has(id) && transition(held.get(id), byId.get(id)!) === 'settle');
    let settled = 0;
    if (toSettle.length > 0) {
      const result = await client.query<{ request_id: string }>(
        `UPDATE ledger AS l SET status = v.status, completed_at = v.completed_at, http_status = v.http_status, prompt_tokens = v.prompt_tokens,
           cached_tokens = v.cached_tokens, completion_tokens = v.completion_tokens, reasoning_tokens = v.reasoning_tokens,
           audio_prompt_tokens = v.audio_prompt_tokens, audio_completion_tokens = v.audio_completion_tokens, service_tier = v.service_tier,
           tool_cost_micros = v.tool_cost_micros, cost_micros = v.cost_micros, upstream = v.upstream, attempts = v.attempts, billed_attempts = v.billed_attempts,
           usage_source = v.usage_source, latency_ms = v.latency_ms, ttft_ms = v.ttft_ms, upstream_request_id = v.upstream_request_id, error_code = v.error_code
         FROM json_populate_recordset(null::ledger, $1::json) AS v
         WHERE l.request_id = v.request_id AND l.status = 'pending'
         RETURNING l.request_id`,
        [JSON.stringify(toSettle.map((id) => toPgRow(byId.get(id)!)))],
      );
      settled = result.rows.length;
      for (const { request_id: id } of result.rows) {
        const delta = countsDelta(held.get(id), byId.get(id)!);
        // The rollup rows its insert chose in PostgreSQL.
        sums.add(byId.get(id)!, delta, held.get(id)!.rollup_folded);
        note(byId.get(id)!, delta);
      }
    }
    await sums.write(client);
    await client.query('COMMIT');
    return { inserted, settled, changes };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** A stored response's owner as the node holds it. */
interface LocalResponse {
  readonly seq: number;
  readonly id: string | null;
  readonly key_id: string;
  readonly request_id: string;
  readonly created_at: number;
  readonly deleted_at: number | null;
  readonly item_of: string | null;
  readonly billed_tokens: number | null;
}

/**
 * Ships owners of stored responses (and of their items): new ones are added,
 * a deletion and a response's billed tokens are kept (the first one wins),
 * anything else already there is left alone — so shipping one twice changes
 * nothing.
 */
async function shipResponses(pool: PgPool, rows: readonly LocalResponse[]): Promise<void> {
  const byId = new Map<string, Omit<LocalResponse, 'seq'>>();
  for (const { seq: _seq, ...row } of rows) if (row.id !== null) byId.set(row.id, row);
  if (byId.size === 0) return;
  await pool.query(
    `INSERT INTO responses (id, key_id, request_id, created_at, deleted_at, item_of, billed_tokens)
     SELECT id, key_id, request_id, created_at, deleted_at, item_of, billed_tokens FROM json_populate_recordset(null::responses, $1::json) ORDER BY id
     ON CONFLICT (id) DO UPDATE SET deleted_at = coalesce(responses.deleted_at, excluded.deleted_at),
       billed_tokens = coalesce(responses.billed_tokens, excluded.billed_tokens)
     WHERE (responses.deleted_at IS NULL AND excluded.deleted_at IS NOT NULL) OR (responses.billed_tokens IS NULL AND excluded.billed_tokens IS NOT NULL)`,
    [JSON.stringify([...byId.values()])],
  );
}

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
