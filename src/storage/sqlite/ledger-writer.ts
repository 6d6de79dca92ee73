/**
 * The ledger writer: groups every write that arrives in one event-loop turn
 * into one SQLite transaction, rollups included (their bookkeeping is in
 * ledger-rollups.ts).
 *
 * - `begin` inserts a request's row as `pending` with its estimate and
 *   resolves only once that row is committed, so the proxy forwards a
 *   request only after it is on disk (a SIGKILL right after loses nothing).
 * - `complete` settles a pending row exactly once (the UPDATE is guarded by
 *   `status = 'pending'`) and moves the rollups by (actual − estimate).
 * - `reject` records a request refused before it went anywhere: counted in
 *   the rollups always, written as a (compact) raw row only within a per-key
 *   allowance (refusal-allowance.ts), so refusal floods cannot grow the file.
 * - End users and tags: a key's distinct names of a day are bounded, decided
 *   in the same transaction (name-bound.ts); past the bound they are counted
 *   under `(other)`, and a new end user with its own limits or budget makes
 *   `begin` reject with 429 `too_many_end_users` (nothing is written).
 *
 * Under load a pending row may wait up to `groupWindowMs` for the rows around
 * it to share its commit (commit-timers.ts: when the writer commits).
 *
 * Locking: every transaction is `BEGIN IMMEDIATE` (the write lock is taken up
 * front, so SQLite's busy handler applies and no read-to-write upgrade can
 * fail with SQLITE_BUSY_SNAPSHOT). SQLite waits for a lock by sleeping in
 * its busy handler, on the event loop (better-sqlite3 is synchronous): 1, 2,
 * then 5 ms, so a lock taken for 3 ms stopped every request in flight for 8.
 * The writer commits on a connection of its own (open.ts, `ledgerConnection`) whose busy timeout
 * is `busyWaitMs`, 0 unless told otherwise, while the shared connection keeps
 * its longer one for key administration (docs/performance.md, "The ledger's
 * commit, page by page" and "The loop asleep in SQLite's busy handler").
 * A commit that finds the database busy (a checkpoint's restart, another
 * process's commit) keeps everything queued and tries again 1, 2, 4 … 32 ms
 * later while the loop serves everything else — the `begin`s in it wait, up
 * to `maxLockWaitMs`. Only a commit that fails otherwise (disk full, I/O
 * error) or waits longer than that rejects its `begin`s: those requests are
 * refused, not forwarded unrecorded; completions stay queued.
 */
import type Database from 'better-sqlite3';
import type { TollgateDatabase } from './open.js';
import { calendarDay } from '../../domain/calendar.js';
import { encodeTags } from '../../domain/rollup-names.js';
import { DEFAULT_NAME_BOUNDS, exactMaskOf } from '../../domain/rollup-names.js';
import type { Completion, LedgerWriter, PendingEntry, Rejection, SpendChange } from '../ledger.js';
import { NameBound, REFUSED } from './name-bound.js';
import { RefusalAllowance } from './refusal-allowance.js';
import { CommitTimers } from './commit-timers.js';
import { contributionOf, prepareRollupStatements, RollupDeltas, type Contribution, type RollupStatements } from './ledger-rollups.js';
import {
  completionRow,
  isBusy,
  loadContribution,
  pendingRow,
  prepareLedgerStatements,
  REFUSAL_CODE_CHARS,
  REFUSAL_MODEL_CHARS,
  spendOfBegin,
  spendOfContribution,
  tooManyEndUsers,
  truncateForStorage,
  type LedgerStatements,
  type LedgerWriterOptions,
  type QueuedRejection,
  type Waiter,
  waitForLockAtShutdown,
} from './ledger-writer-rows.js';

export type { LedgerWriterOptions } from './ledger-writer-rows.js';

/** What one commit writes, and what it decided while writing. */
interface Batch {
  readonly begins: readonly Waiter[];
  readonly completions: readonly Completion[];
  readonly rejections: readonly QueuedRejection[];
  readonly rollups: RollupDeltas;
  /** Request ids settled in this commit. */
  readonly settled: string[];
  /** What the name bound decided for each begin: its contribution, or refused (nothing written). */
  readonly placed: Array<Contribution | undefined>;
  foldedEndUsers: number;
  foldedTags: number;
}

export class SqliteLedgerWriter implements LedgerWriter {
  private readonly sqlite: Database.Database;
  private readonly options: LedgerWriterOptions;
  private readonly maxBatch: number;
  private begins: Waiter[] = [];
  private completions: Completion[] = [];
  private rejections: QueuedRejection[] = [];
  private readonly refusalAllowance: RefusalAllowance;
  private readonly maxLockWaitMs: number;
  /** Consecutive busy commits: the retry delay grows with it. */
  private busyStreak = 0;
  private readonly contributions = new Map<string, Contribution>();
  private readonly timers: CommitTimers;
  private closed = false;
  private lastCommitFailed = false;
  private readonly statements: LedgerStatements;
  private readonly rollupStatements: RollupStatements;
  private readonly names: NameBound;
  /**
   * {@link SqliteLedgerWriter.writeRows} in a `BEGIN IMMEDIATE` transaction, built once: better-sqlite3's
   * `transaction()` makes four wrapper functions and their properties per call, which every commit paid.
   */
  private readonly writeBatch: (batch: Batch) => void;

  constructor(database: TollgateDatabase, options: LedgerWriterOptions = {}) {
    // Only the writer commits on its connection, so its busy timeout is set once, not around every commit.
    this.sqlite = database.ledgerConnection(Math.max(0, Math.floor(options.busyWaitMs ?? 0)));
    this.options = options;
    this.maxBatch = options.maxBatch ?? 2000;
    this.timers = new CommitTimers(this.commitDue, this.commitDelayed, Math.max(0, options.groupWindowMs ?? 2), options.settleDelayMs ?? 5);
    this.maxLockWaitMs = options.maxLockWaitMs ?? 10_000;
    this.refusalAllowance = new RefusalAllowance(options.refusalRowsPerMinute ?? 60);
    this.statements = prepareLedgerStatements(this.sqlite);
    this.rollupStatements = prepareRollupStatements(this.sqlite);
    this.names = new NameBound(this.sqlite, options.nameBounds ?? DEFAULT_NAME_BOUNDS);
    this.writeBatch = this.sqlite.transaction((batch: Batch) => this.writeRows(batch)).immediate;
  }

  /** Records a request as pending; resolves once the row is committed. */
  begin(entry: PendingEntry): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the ledger writer is closed'));
    return new Promise<void>((resolve, reject) => {
      const queuedAt = performance.now();
      this.begins.push({ entry, queuedAt, resolve, reject });
      this.options.spend?.queuedChange(spendOfBegin(entry));
      this.timers.pendingRow(queuedAt, this.contributions.size);
    });
  }

  /** Settles a pending request (once; a second completion for the same id changes nothing). */
  complete(completion: Completion): void {
    this.completions.push(completion);
    const change = this.spendOfCompletion(completion);
    if (change !== undefined) this.options.spend?.queuedChange(change);
    this.timers.settleDelay();
  }

  /** The spend a settlement adds: actual − estimate, filed under the request's day. */
  private spendOfCompletion(completion: Completion): SpendChange | undefined {
    const contribution = this.contributions.get(completion.requestId);
    if (contribution === undefined || this.settling.has(completion.requestId)) return undefined;
    this.settling.add(completion.requestId);
    return spendOfContribution(contribution, completion.costMicros - contribution.estCostMicros);
  }

  /** Request ids whose settlement is queued (a duplicate must not count twice). */
  private readonly settling = new Set<string>();

  /** Records a request refused before it reached the upstream (a raw row within the key's allowance; always counted). */
  reject(rejection: Rejection): void {
    const rollupModel = this.options.refusalRollupModel?.(rejection.model) ?? rejection.model;
    this.rejections.push({
      ...rejection,
      model: truncateForStorage(rejection.model, REFUSAL_MODEL_CHARS),
      errorCode: truncateForStorage(rejection.errorCode, REFUSAL_CODE_CHARS),
      rollupModel: truncateForStorage(rollupModel, REFUSAL_MODEL_CHARS),
      raw: this.refusalAllowance.take(rejection.keyId, rejection.createdAt),
    });
    this.timers.settleDelay();
  }

  /** Operations waiting for the next commit. */
  get queueDepth(): number {
    return this.begins.length + this.completions.length + this.rejections.length;
  }

  /** Commits everything queued so far; false when a commit failed and work is still queued. */
  flush(): boolean {
    while (this.queueDepth > 0) {
      this.commitNow();
      if (this.lastCommitFailed) return false;
    }
    return true;
  }

  /** Refuses further `begin`s and flushes, waiting for the lock if it must; false when something could not be written. */
  close(): boolean {
    this.closed = true;
    this.timers.cancel();
    waitForLockAtShutdown(this.sqlite);
    return this.flush();
  }

  /** The next turn or the group window came (commit-timers.ts). Work left over past maxBatch goes in the next turn. */
  private readonly commitDue = (): void => {
    this.commitNow();
    if (this.queueDepth > 0 && !this.lastCommitFailed) {
      if (this.begins.length > 0) this.timers.nextTurn();
      else this.timers.settleDelay();
    }
  };

  /** The settle delay came. After a failed commit its retry is on its way (retryAfter), and commits what waits. */
  private readonly commitDelayed = (): void => {
    if (this.lastCommitFailed) return;
    this.commitNow();
    if (this.queueDepth > 0 && !this.lastCommitFailed) this.timers.settleDelay();
  };

  private commitNow(): void {
    const begins = this.begins.splice(0, this.maxBatch);
    const room = Math.max(0, this.maxBatch - begins.length);
    const completions = this.completions.splice(0, room);
    const rejections = this.rejections.splice(0, Math.max(0, room - completions.length));
    if (begins.length + completions.length + rejections.length === 0) return;
    const started = performance.now();
    const batch: Batch = { begins, completions, rejections, rollups: new RollupDeltas(), settled: [], placed: [], foldedEndUsers: 0, foldedTags: 0 };
    const { settled, placed } = batch;
    try {
      this.writeBatch(batch);
    } catch (error) {
      this.names.rolledBack();
      this.lastCommitFailed = true;
      // Completions and rejections wait for the next attempt.
      this.completions.unshift(...completions);
      this.rejections.unshift(...rejections);
      if (isBusy(error)) {
        // Busy is not failure: the begins wait too (their requests are
        // waiting for the row anyway), unless they have waited too long.
        const now = performance.now();
        const waiting = begins.filter((waiter) => now - waiter.queuedAt < this.maxLockWaitMs);
        const expired = begins.filter((waiter) => now - waiter.queuedAt >= this.maxLockWaitMs);
        this.begins.unshift(...waiting);
        this.refuseBegins(expired, error);
        this.options.onBusy?.();
        if (expired.length > 0) this.options.onError?.(error);
        this.busyStreak += 1;
        // 1, 2, 4 … 32 ms: soon enough to add little latency, slow enough
        // not to spin on a lock another process holds for long.
        const delay = Math.min(32, 2 ** Math.min(5, this.busyStreak - 1));
        this.retryAfter(delay);
        return;
      }
      this.refuseBegins(begins, error);
      this.options.onError?.(error);
      // Try again later rather than spinning on a full or broken disk.
      this.retryAfter(100);
      return;
    }
    this.names.committed();
    this.busyStreak = 0;
    this.lastCommitFailed = false;
    const spend = this.options.spend;
    const refused: Waiter[] = [];
    begins.forEach((waiter, i) => {
      const contribution = placed[i];
      if (contribution === undefined) {
        refused.push(waiter);
        return;
      }
      this.contributions.set(waiter.entry.requestId, contribution);
      spend?.committedChange(spendOfBegin(waiter.entry));
    });
    for (const completion of completions) {
      const contribution = this.contributions.get(completion.requestId);
      if (spend !== undefined && contribution !== undefined && this.settling.has(completion.requestId)) {
        spend.committedChange(spendOfContribution(contribution, completion.costMicros - contribution.estCostMicros));
      }
      this.settling.delete(completion.requestId);
    }
    for (const requestId of settled) this.contributions.delete(requestId);
    for (let i = 0; i < begins.length; i += 1) if (placed[i] !== undefined) begins[i]!.resolve();
    // Built only when some begin was refused: an error captures a stack, and commits are many.
    if (refused.length > 0) this.refuseBegins(refused, tooManyEndUsers(this.options.nameBounds ?? DEFAULT_NAME_BOUNDS));
    this.options.onCommit?.({
      rows: begins.length + completions.length + rejections.length,
      durationMs: performance.now() - started,
      foldedEndUsers: batch.foldedEndUsers,
      foldedTags: batch.foldedTags,
      refusedEndUsers: refused.length,
    });
  }

  /** One commit's writes, in the transaction {@link SqliteLedgerWriter.writeBatch} wraps. */
  private writeRows(batch: Batch): void {
    batch.placed.length = 0;
    batch.foldedEndUsers = 0;
    batch.foldedTags = 0;
    for (const { entry } of batch.begins) {
      const at = contributionOf(entry);
      const exact = entry.exact === undefined ? 0 : exactMaskOf(at.endUser, at.tags, entry.exact);
      const decision = this.names.decide(entry.keyId, at.day, at.endUser, at.tags, exact, 'add');
      if (decision.folded === REFUSED) {
        batch.placed.push(undefined);
        continue;
      }
      batch.foldedEndUsers += decision.foldedEndUsers;
      batch.foldedTags += decision.foldedTags;
      const contribution = decision.folded === 0 ? at : { ...at, folded: decision.folded };
      batch.placed.push(contribution);
      this.statements.insertPending.run(...pendingRow(entry, decision.folded, exact));
      batch.rollups.add(contribution, {
        requests: 1,
        promptTokens: entry.estPromptTokens,
        completionTokens: entry.estCompletionTokens,
        costMicros: entry.estCostMicros,
        lastRequestAt: entry.createdAt,
      });
    }
    for (const completion of batch.completions) {
      const result = this.statements.complete.run(...completionRow(completion));
      const contribution = this.contributions.get(completion.requestId) ?? loadContribution(this.statements, completion.requestId);
      batch.settled.push(completion.requestId);
      if (result.changes === 0 || contribution === undefined) continue; // already settled: exactly once
      const delta = {
        promptTokens: completion.promptTokens - contribution.estPromptTokens,
        cachedTokens: completion.cachedTokens,
        completionTokens: completion.completionTokens - contribution.estCompletionTokens,
        reasoningTokens: completion.reasoningTokens,
        costMicros: completion.costMicros - contribution.estCostMicros,
        errors: completion.status === 'ok' ? 0 : 1,
      };
      batch.rollups.add(contribution, delta);
    }
    for (const rejection of batch.rejections) {
      let folded = 0;
      if (rejection.raw) {
        // A refusal cost nothing: its names count in their rows when they have one, else under (other).
        const tags = rejection.tags ?? [];
        const exact = rejection.exact === undefined ? 0 : exactMaskOf(rejection.endUser, tags, rejection.exact);
        const decision = this.names.decide(rejection.keyId, calendarDay(rejection.createdAt), rejection.endUser, tags, exact, 'existing');
        folded = decision.folded;
        const { rollupModel: _model, raw: _raw, exact: _exact, ...row } = rejection;
        const result = this.statements.insertRejection.run({
          ...row,
          stream: rejection.stream ? 1 : 0,
          endUser: rejection.endUser ?? null,
          tags: encodeTags(tags),
          session: rejection.session ?? null,
          rollupFolded: folded === 0 ? null : folded,
          rollupExact: exact === 0 ? null : exact,
        });
        if (result.changes === 0) continue;
        batch.foldedEndUsers += decision.foldedEndUsers;
        batch.foldedTags += decision.foldedTags;
      }
      const counts = {
        rejectedRateLimit: rejection.reason === 'rate_limit' ? 1 : 0,
        rejectedBudget: rejection.reason === 'budget' ? 1 : 0,
        errors: rejection.reason === 'other' ? 1 : 0,
        lastRequestAt: rejection.createdAt,
      };
      // A refusal past the key's allowance adds no end-user or tag rollup row either: a flood of
      // refusals naming a new user each must not grow the file (README, "Hostile tenants").
      const attributed = rejection.raw ? {} : { endUser: undefined, tags: undefined };
      batch.rollups.add(
        contributionOf({ ...rejection, ...attributed, model: rejection.rollupModel, estPromptTokens: 0, estCompletionTokens: 0, estCostMicros: 0 }, folded),
        counts,
      );
    }
    batch.rollups.write(this.rollupStatements);
  }

  /** Refuses `begin`s whose rows could not be written: their requests are not forwarded. */
  private refuseBegins(waiters: readonly Waiter[], error: unknown): void {
    for (const waiter of waiters) {
      this.options.spend?.droppedChange(spendOfBegin(waiter.entry));
      waiter.reject(error);
    }
  }

  /** Tries the queued work again after `delayMs`. */
  private retryAfter(delayMs: number): void {
    setTimeout(() => {
      this.lastCommitFailed = false;
      if (this.begins.length > 0) this.timers.nextTurn();
      else if (this.queueDepth > 0) this.timers.settleDelay();
    }, delayMs).unref();
  }
}
