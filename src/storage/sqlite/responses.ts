/**
 * The node's stored responses (the ResponseStore of src/storage/responses.ts):
 * which key created which stored response, and which background jobs still
 * wait for their usage (the `responses` table, src/storage/sqlite/schema.ts).
 *
 * New responses are written in one transaction per event-loop turn (a
 * commit of its own cost each one 0.14–0.3 ms on a busy 2-core machine,
 * 13 µs each in batches of 100) and are found in
 * memory until then, so the key sees its response at once; other processes
 * sharing the file see it a turn later. Those commits go through the ledger
 * writer's connection (open.ts, `ledgerConnection`), whose busy timeout is 0:
 * a commit that finds the file locked (the WAL checkpointer restarting the
 * WAL, another process) is tried again shortly instead of sleeping in
 * SQLite's busy handler on the event loop (docs/performance.md, "The loop
 * asleep in SQLite's busy handler").
 *
 * Beside its owner, a response keeps what continuing it bills (its settled
 * input plus output tokens, `billed_tokens`), and its items — the output
 * items Tollgate relayed, the input items a listing showed — are rows of
 * their own (`item_of`), owned by the same key, so a request may refer only
 * to its own (src/pipeline/ownership.ts). Deleting a response deletes its
 * items.
 *
 * A background job is claimed by the process polling it (`claimed_until`),
 * renewed while it polls and released at a clean shutdown, so that processes
 * sharing the database poll each job once and a restarted process takes over
 * the jobs nobody claims any more.
 *
 * On a replica (TOLLGATE_DATABASE_URL) ownership is shared: each node's rows
 * (and deletions) are shipped to PostgreSQL's `responses` with its ledger
 * (src/storage/postgres/shipper.ts), and an id this node does not hold is looked up
 * there (src/storage/postgres/responses.ts) and kept locally from then on, so a response created through one
 * node is retrieved, cancelled, deleted or continued through any other (and
 * so are its items). A background job
 * is still polled and settled by the node that created it (its ledger row and
 * reservation live there); a cancel through another node reaches the
 * upstream at once, and the creating node's next poll settles the job.
 */
import type Database from 'better-sqlite3';
import { isBusy, waitForLockAtShutdown } from './ledger-writer-rows.js';
import type { TollgateDatabase } from './open.js';
import type { NewResponse, SharedResponseRow, SharedResponses, StoredResponse, UnclaimedJob } from '../responses.js';

/** How soon a flush that found the file locked is tried again (ms). */
const BUSY_RETRY_MS = 2;

interface ResponseRow {
  readonly key_id: string;
  readonly request_id: string;
  readonly created_at: number;
  readonly billed_tokens: number | null;
}

export class ResponseStore {
  private readonly statements: ReturnType<ResponseStore['prepare']>;
  /** The ledger connection, which the flushes write on. */
  private readonly writes: Database.Database;
  /** One flush's writes, on the ledger connection, its transaction built once. */
  private readonly writeBatch: (entries: readonly NewResponse[], billed: ReadonlyArray<readonly [string, number]>) => void;
  private readonly onError: (error: unknown) => void;
  /** Remembered, not committed yet. */
  private readonly queued = new Map<string, NewResponse>();
  /** Usage learned for responses already committed, not written yet. */
  private readonly billed = new Map<string, number>();
  /** The flush of this turn's responses. */
  private turn: NodeJS.Immediate | undefined;
  /**
   * The retry of a flush that failed. Kept apart from {@link turn}: `clearImmediate` given a
   * Timeout corrupts Node's queue of immediates, and no `setImmediate` in the process runs again.
   */
  private retry: NodeJS.Timeout | undefined;
  /** What the other nodes stored, on a replica (PostgreSQL's `responses`). */
  private readonly shared: SharedResponses | undefined;

  constructor(database: TollgateDatabase, options: { onError?: (error: unknown) => void; shared?: SharedResponses | undefined } = {}) {
    this.statements = this.prepare(database.sqlite);
    this.onError = options.onError ?? (() => undefined);
    const writes = database.ledgerConnection();
    this.writes = writes;
    const insert = writes.prepare(
      `INSERT INTO responses (id, key_id, request_id, created_at, unsettled, claimed_until, item_of, billed_tokens)
       VALUES (@id, @keyId, @requestId, @createdAt, @unsettled, @claimedUntil, @itemOf, @billedTokens)
       ON CONFLICT(id) DO NOTHING`,
    );
    const setBilled = writes.prepare('UPDATE responses SET billed_tokens = ? WHERE id = ? AND item_of IS NULL AND billed_tokens IS NULL');
    this.writeBatch = writes.transaction((entries: readonly NewResponse[], billed: ReadonlyArray<readonly [string, number]>) => {
      for (const entry of entries) {
        insert.run({
          id: entry.id,
          keyId: entry.keyId,
          requestId: entry.requestId,
          createdAt: entry.createdAt,
          unsettled: entry.background ? 1 : 0,
          claimedUntil: entry.background ? entry.claimedUntil : 0,
          itemOf: entry.itemOf ?? null,
          billedTokens: entry.billedTokens ?? null,
        });
      }
      for (const [id, tokens] of billed) setBilled.run(tokens, id);
    }).immediate;
    this.shared = options.shared;
  }

  private prepare(s: Database.Database) {
    return {
      response: s.prepare('SELECT key_id, request_id, created_at, billed_tokens FROM responses WHERE id = ? AND deleted_at IS NULL AND item_of IS NULL'),
      itemOwner: s.prepare('SELECT key_id FROM responses WHERE id = ? AND deleted_at IS NULL AND item_of IS NOT NULL'),
      markDeleted: s.prepare('UPDATE responses SET deleted_at = @now WHERE (id = @id OR item_of = @id) AND deleted_at IS NULL'),
      // Only once the ledger row is settled on disk: a crash in between must leave the job to take over.
      settled: s.prepare(
        `UPDATE responses SET unsettled = 0, claimed_until = 0
         WHERE id = ? AND unsettled = 1 AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.request_id = responses.request_id AND l.status = 'pending')`,
      ),
      unsettled: s.prepare('SELECT unsettled FROM responses WHERE id = ?'),
      renew: s.prepare('UPDATE responses SET claimed_until = ? WHERE id = ? AND unsettled = 1'),
      release: s.prepare('UPDATE responses SET claimed_until = 0 WHERE id = ? AND unsettled = 1'),
      unclaimed: s.prepare(
        `SELECT r.id AS responseId, r.request_id AS requestId, r.key_id AS keyId, l.created_at AS createdAt, l.model AS model,
           l.est_prompt_tokens AS estPromptTokens, l.est_completion_tokens AS estCompletionTokens, l.est_cost_micros AS estCostMicros,
           l.upstream_request_id AS upstreamRequestId, l.status = 'pending' AS pending
         FROM responses r JOIN ledger l ON l.request_id = r.request_id
         WHERE r.unsettled = 1 AND r.claimed_until < ?`,
      ),
      claim: s.prepare('UPDATE responses SET claimed_until = @until WHERE id = @id AND unsettled = 1 AND claimed_until < @now'),
    };
  }

  /**
   * Remembers a stored response for its key; a background job is claimed by
   * the caller until `claimedUntil`. Called before the client sees the id.
   */
  remember(entry: NewResponse): void {
    this.queued.set(entry.id, { ...entry });
    this.turn ??= setImmediate(() => this.flush());
  }

  /** The last flush, at shutdown: waits for the lock if it must; false when the rows could not be written. */
  close(): boolean {
    waitForLockAtShutdown(this.writes);
    return this.flush();
  }

  /** Commits what was remembered; false when the commit failed (it is retried). */
  flush(): boolean {
    if (this.turn !== undefined) clearImmediate(this.turn);
    if (this.retry !== undefined) clearTimeout(this.retry);
    this.turn = undefined;
    this.retry = undefined;
    if (this.queued.size === 0 && this.billed.size === 0) return true;
    const entries = [...this.queued.values()];
    const billed = [...this.billed];
    try {
      this.writeBatch(entries, billed);
    } catch (error) {
      // Locked (a WAL restart holds the lock a few ms): soon, and nothing to report. A full or broken
      // disk: said, and tried again shortly rather than on every turn.
      const busy = isBusy(error);
      if (!busy) this.onError(error);
      this.retry = setTimeout(() => this.flush(), busy ? BUSY_RETRY_MS : 100);
      this.retry.unref();
      return false;
    }
    for (const entry of entries) if (this.queued.get(entry.id) === entry) this.queued.delete(entry.id);
    for (const [id, tokens] of billed) if (this.billed.get(id) === tokens) this.billed.delete(id);
    return true;
  }

  /** A response held here (queued or committed, not deleted), items aside. */
  private localResponse(id: string): (StoredResponse & { requestId: string; createdAt: number }) | undefined {
    const queued = this.queued.get(id);
    if (queued !== undefined) {
      return queued.itemOf === undefined
        ? { keyId: queued.keyId, billedTokens: queued.billedTokens, requestId: queued.requestId, createdAt: queued.createdAt }
        : undefined;
    }
    const row = this.statements.response.get(id) as ResponseRow | undefined;
    if (row === undefined) return undefined;
    return { keyId: row.key_id, billedTokens: this.billed.get(id) ?? row.billed_tokens ?? undefined, requestId: row.request_id, createdAt: row.created_at };
  }

  /**
   * The key that created a response, here or (on a replica) on any node;
   * undefined when unknown or deleted. PostgreSQL unreachable while an id is
   * not held here: a 503 the SDKs retry, never a 404 that may be wrong.
   */
  async findOwner(id: string): Promise<string | undefined> {
    // Its owner never changes: one held here needs no lookup, even while its size is unknown.
    return this.localResponse(id)?.keyId ?? (await this.findResponse(id))?.keyId;
  }

  /**
   * A stored response — its owner, and what continuing it bills when known —
   * here or (on a replica) on any node; undefined when unknown or deleted.
   * One whose usage is not known here is looked up in PostgreSQL too (another
   * node may have settled it).
   */
  async findResponse(id: string): Promise<StoredResponse | undefined> {
    const local = this.localResponse(id);
    if (this.shared === undefined || (local !== undefined && local.billedTokens !== undefined)) return local;
    let row: SharedResponseRow | undefined;
    try {
      row = await this.shared.response(id);
    } catch (error) {
      // Held here: its owner is known, only its size is not (reserved at the bound).
      if (local !== undefined) return local;
      throw error;
    }
    if (row === undefined) return local;
    const billedTokens = row.billedTokens;
    if (local === undefined) {
      // Kept here (owner only: the creating node polls it), so a delete through this node reaches every node.
      this.remember({ id, keyId: row.keyId, requestId: row.requestId, createdAt: row.createdAt, background: false, claimedUntil: 0, billedTokens });
    } else if (billedTokens !== undefined) {
      this.noteBilled(id, billedTokens);
    }
    return { keyId: row.keyId, billedTokens };
  }

  /**
   * The first of `ids` that is not an item of one of `keyId`'s responses (here
   * or, on a replica, on any node), or undefined when every one is.
   */
  async firstItemNotOwned(keyId: string, ids: readonly string[]): Promise<string | undefined> {
    const missing: string[] = [];
    for (const id of ids) {
      const queued = this.queued.get(id);
      const owner =
        queued !== undefined
          ? queued.itemOf === undefined
            ? undefined
            : queued.keyId
          : (this.statements.itemOwner.get(id) as { key_id: string } | undefined)?.key_id;
      if (owner === undefined) missing.push(id);
      else if (owner !== keyId) return id;
    }
    if (missing.length === 0) return undefined;
    if (this.shared === undefined) return missing[0];
    const found = new Map((await this.shared.items(missing)).map((row) => [row.id, row]));
    for (const id of missing) {
      const row = found.get(id);
      if (row === undefined || row.keyId !== keyId) return id;
      this.remember({
        id,
        keyId: row.keyId,
        requestId: row.requestId,
        createdAt: row.createdAt,
        background: false,
        claimedUntil: 0,
        itemOf: row.itemOf,
      });
    }
    return undefined;
  }

  /**
   * What a response's answer told: the input plus output tokens its usage
   * reported (what continuing it bills again), and the ids of its items, which
   * become its key's. Nothing for a response not stored here.
   */
  noteAnswer(id: string, answer: { readonly billedTokens?: number | undefined; readonly itemIds?: readonly string[] | undefined }): void {
    const response = this.localResponse(id);
    if (response === undefined) return;
    if (answer.billedTokens !== undefined) this.noteBilled(id, answer.billedTokens);
    for (const itemId of answer.itemIds ?? []) {
      if (itemId === id || this.queued.has(itemId)) continue;
      this.remember({
        id: itemId,
        keyId: response.keyId,
        requestId: response.requestId,
        createdAt: response.createdAt,
        background: false,
        claimedUntil: 0,
        itemOf: id,
      });
    }
  }

  private noteBilled(id: string, tokens: number): void {
    const queued = this.queued.get(id);
    if (queued !== undefined) queued.billedTokens ??= tokens;
    else this.billed.set(id, tokens);
    this.turn ??= setImmediate(() => this.flush());
  }

  /** Deletes a response and its items (here; the deletion ships to every node on a replica). */
  markDeleted(id: string, now: number): void {
    for (const entry of [...this.queued.values()]) if (entry.id === id || entry.itemOf === id) this.queued.delete(entry.id);
    this.billed.delete(id);
    this.statements.markDeleted.run({ now, id });
  }

  /**
   * Nobody needs to poll the job again — once its ledger row is settled on
   * disk; false while it is not (the settlement is still queued).
   */
  markSettled(id: string): boolean {
    if (this.queued.has(id)) return false;
    if (this.statements.settled.run(id).changes === 1) return true;
    // Unknown (never stored) or already unflagged: nothing left to do either.
    return (this.statements.unsettled.get(id) as { unsettled: number } | undefined)?.unsettled !== 1;
  }

  /** Extends this process's claims (the jobs it polls, or relays right now). */
  renewClaims(ids: Iterable<string>, until: number): void {
    for (const id of ids) this.statements.renew.run(until, id);
  }

  releaseClaims(ids: Iterable<string>): void {
    for (const id of ids) this.statements.release.run(id);
  }

  /** Claims every unsettled job whose claim expired; returns the ones this call won. */
  claimUnclaimed(now: number, until: number): UnclaimedJob[] {
    const rows = this.statements.unclaimed.all(now) as Array<Omit<UnclaimedJob, 'pending'> & { pending: number }>;
    const won: UnclaimedJob[] = [];
    for (const row of rows) {
      // Another process may claim the same row between the read and here: the UPDATE decides.
      if (this.statements.claim.run({ id: row.responseId, until, now }).changes === 1) won.push({ ...row, pending: row.pending === 1 });
    }
    return won;
  }
}
