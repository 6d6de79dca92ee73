/**
 * The ledger writer's options, its statements and the values it binds to them. The two statements
 * every request runs (its pending row, its settlement) take their values as arguments in column
 * order: bound from an object, better-sqlite3 asks the object for each named parameter twice
 * (has, get) through V8's API, about 40,000 instructions a request of the 1 KB chat path, against
 * none for arguments (docs/performance.md, "Values bound in column order").
 */
import type Database from 'better-sqlite3';
import { calendarDay } from '../../domain/calendar.js';
import { decodeTags, encodeTags } from '../../domain/rollup-names.js';
import type { NameBounds } from '../../domain/rollup-names.js';
import { TollgateError } from '../../domain/errors.js';
import type { Completion, PendingEntry, Rejection, SpendChange, SpendListener } from '../ledger.js';
import { contributionOf, type Contribution } from './ledger-rollups.js';

interface WriterStats {
  readonly rows: number;
  readonly durationMs: number;
  /** End users and tags of this commit's rows counted under `(other)` (past the key's bound of the day). */
  readonly foldedEndUsers: number;
  readonly foldedTags: number;
  /** Requests refused because their new end user has limits or a budget and the key is past its bound. */
  readonly refusedEndUsers: number;
}

export interface LedgerWriterOptions {
  /** Called after each commit (metrics). */
  readonly onCommit?: (stats: WriterStats) => void;
  /** Called when a commit fails (logs). */
  readonly onError?: (error: unknown) => void;
  /** Largest number of operations in one transaction. */
  readonly maxBatch?: number;
  /**
   * How long settlements and rejections may wait to share a commit (ms).
   * A pending row always commits on the next turn; what follows it is not
   * needed before forwarding anything, so at low load a request's settlement
   * rides along with the next request's pending row instead of costing a
   * commit of its own. Default 5.
   */
  readonly settleDelayMs?: number;
  /**
   * Longest a pending row waits for others to share its commit, under load (ms): only while at least
   * four requests are in flight and the previous pending row came less than this ago. 0 commits every
   * pending row on the next turn. Default 2.
   */
  readonly groupWindowMs?: number;
  /** Keeps budgets exact between commits. */
  readonly spend?: SpendListener;
  /**
   * Longest a `begin` waits for a busy database (another process's commit, a
   * checkpoint) before its request is refused with 503 (ms). Default 10 000.
   */
  readonly maxLockWaitMs?: number;
  /**
   * Longest one commit attempt waits for the write lock inside SQLite, with
   * the event loop blocked (ms); then it yields and tries again. Default 0:
   * a busy attempt is tried again on a timer, the loop never sleeps. The busy
   * timeout of the database's ledger connection, which its writers share.
   */
  readonly busyWaitMs?: number;
  /** Called each time a commit found the database busy and will try again (metrics). */
  readonly onBusy?: () => void;
  /** Refusals of one key written as raw ledger rows per minute; the rest are only counted in the rollups. Default 60. */
  readonly refusalRowsPerMinute?: number;
  /**
   * The model name a refusal is counted under in the rollups (rollup rows are
   * per model): the price table's name for a known model, else one bucket, so
   * refused requests naming thousands of models add one row. Default: as sent.
   */
  readonly refusalRollupModel?: (model: string) => string;
  /** Distinct end users and tags per key per day with rollup rows of their own (TOLLGATE_MAX_END_USERS, TOLLGATE_MAX_TAGS). */
  readonly nameBounds?: NameBounds;
}

/** The writer's own statements (the rollups' are in ledger-rollups.ts), prepared once per writer. */
export function prepareLedgerStatements(s: Database.Database) {
  return {
    insertPending: s.prepare<PendingValues>(
      `INSERT INTO ledger (${PENDING_COLUMNS.join(', ')}, status) VALUES (${PENDING_COLUMNS.map(() => '?').join(', ')}, 'pending')`,
    ),
    complete: s.prepare<CompletionValues>(
      `UPDATE ledger SET ${COMPLETION_COLUMNS.map((column) => `${column} = ?`).join(', ')} WHERE request_id = ? AND status = 'pending'`,
    ),
    insertRejection: s.prepare(
      `INSERT INTO ledger (request_id, key_id, tenant_id, created_at, completed_at, endpoint, model, stream, status,
         http_status, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens,
         completion_tokens, reasoning_tokens, cost_micros, usage_source, latency_ms, error_code, end_user, tags, session, rollup_folded, rollup_exact)
       VALUES (@requestId, @keyId, @tenantId, @createdAt, @createdAt, @endpoint, @model, @stream, @status,
         @httpStatus, @estPromptTokens, @estCompletionTokens, @estCostMicros, 0, 0, 0, 0, 0, 'none', 0, @errorCode, @endUser, @tags, @session, @rollupFolded, @rollupExact)
       ON CONFLICT(request_id) DO NOTHING`,
    ),
    contributionOf: s.prepare(
      'SELECT key_id, tenant_id, created_at, model, est_prompt_tokens, est_completion_tokens, est_cost_micros, end_user, tags, session, rollup_folded FROM ledger WHERE request_id = ?',
    ),
  };
}

export type LedgerStatements = ReturnType<typeof prepareLedgerStatements>;

/** Longest model name and error code kept in a refusal's raw row. */
export const REFUSAL_MODEL_CHARS = 64;
export const REFUSAL_CODE_CHARS = 64;

/** A string cut to `max` characters for storage, marked with … when cut. */
export function truncateForStorage(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The busy timeout of a writer's last flush at shutdown (ms), the shared connection's. */
const SHUTDOWN_BUSY_MS = 5000;

/**
 * Lets the ledger connection's last commits wait for the lock. Until shutdown a commit never sleeps
 * for it on the event loop (busy timeout 0, tried again on a timer: docs/performance.md, "The loop
 * asleep in SQLite's busy handler"); then there is no later turn and the last rows must be written.
 */
export function waitForLockAtShutdown(connection: Database.Database): void {
  try {
    connection.pragma(`busy_timeout = ${SHUTDOWN_BUSY_MS}`);
  } catch {
    // Already closed: the flush that follows fails and says so.
  }
}

/** SQLite's "database is locked/busy" result codes (extended codes included). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

export interface Waiter {
  readonly entry: PendingEntry;
  /** performance.now() when queued: how long it has waited for a busy database. */
  readonly queuedAt: number;
  resolve(): void;
  reject(error: unknown): void;
}

/** The refusal of a new end user with limits or a budget of its own, once the key has the most end users a day may have. */
export function tooManyEndUsers(bounds: NameBounds): TollgateError {
  return new TollgateError(
    'too_many_end_users',
    `This key already has ${bounds.endUsers} distinct end users today, the most Tollgate tracks one by one (TOLLGATE_MAX_END_USERS); ` +
      'this end user is new and has limits or a budget of its own, which cannot be kept exactly beyond that bound. ' +
      'Requests of end users already seen today still pass; new ones can again tomorrow.',
    { param: 'user', headers: { 'x-should-retry': 'false' } },
  );
}

/** A pending row's columns, in the order {@link pendingRow} gives their values. */
const PENDING_COLUMNS = [
  'request_id',
  'key_id',
  'tenant_id',
  'created_at',
  'endpoint',
  'model',
  'stream',
  'est_prompt_tokens',
  'est_completion_tokens',
  'est_cost_micros',
  'price_known',
  'end_user',
  'tags',
  'session',
  'rollup_folded',
  'rollup_exact',
] as const;

type PendingValues = [
  requestId: string,
  keyId: string,
  tenantId: string | null,
  createdAt: number,
  endpoint: string,
  model: string,
  stream: number,
  estPromptTokens: number,
  estCompletionTokens: number,
  estCostMicros: number,
  priceKnown: number,
  endUser: string | null,
  tags: string | null,
  session: string | null,
  rollupFolded: number | null,
  rollupExact: number | null,
];

/** The `insertPending` values of a pending row, in {@link PENDING_COLUMNS}' order. */
export function pendingRow(entry: PendingEntry, folded: number, exact: number): PendingValues {
  return [
    entry.requestId,
    entry.keyId,
    entry.tenantId,
    entry.createdAt,
    entry.endpoint,
    entry.model,
    entry.stream ? 1 : 0,
    entry.estPromptTokens,
    entry.estCompletionTokens,
    entry.estCostMicros,
    entry.priceKnown ? 1 : 0,
    entry.endUser ?? null,
    encodeTags(entry.tags ?? []),
    entry.session ?? null,
    folded === 0 ? null : folded,
    exact === 0 ? null : exact,
  ];
}

/** The columns a settlement sets, in the order {@link completionRow} gives their values (the request id follows them). */
const COMPLETION_COLUMNS = [
  'status',
  'http_status',
  'completed_at',
  'prompt_tokens',
  'cached_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'audio_prompt_tokens',
  'audio_completion_tokens',
  'cache_write_5m_tokens',
  'cache_write_1h_tokens',
  'service_tier',
  'tool_cost_micros',
  'cost_micros',
  'usage_source',
  'latency_ms',
  'ttft_ms',
  'upstream_request_id',
  'error_code',
  'upstream',
  'attempts',
  'billed_attempts',
] as const;

type CompletionValues = [
  status: string,
  httpStatus: number | null,
  completedAt: number,
  promptTokens: number,
  cachedTokens: number,
  completionTokens: number,
  reasoningTokens: number,
  audioPromptTokens: number,
  audioCompletionTokens: number,
  cacheWrite5mTokens: number,
  cacheWrite1hTokens: number,
  serviceTier: string | null,
  toolCostMicros: number,
  costMicros: number,
  usageSource: string,
  latencyMs: number,
  ttftMs: number | null,
  upstreamRequestId: string | null,
  errorCode: string | null,
  upstream: string | null,
  attempts: number | null,
  billedAttempts: number | null,
  requestId: string,
];

/** The `complete` values of a settlement: {@link COMPLETION_COLUMNS}' then the request id. */
export function completionRow(completion: Completion): CompletionValues {
  return [
    completion.status,
    completion.httpStatus,
    completion.completedAt,
    completion.promptTokens,
    completion.cachedTokens,
    completion.completionTokens,
    completion.reasoningTokens,
    completion.audioPromptTokens ?? 0,
    completion.audioCompletionTokens ?? 0,
    completion.cacheWrite5mTokens ?? 0,
    completion.cacheWrite1hTokens ?? 0,
    completion.serviceTier ?? null,
    completion.toolCostMicros ?? 0,
    completion.costMicros,
    completion.usageSource,
    completion.latencyMs,
    completion.ttftMs,
    completion.upstreamRequestId,
    completion.errorCode,
    completion.upstream ?? null,
    completion.attempts ?? null,
    completion.billedAttempts ?? null,
    completion.requestId,
  ];
}

/** A refusal as queued: compacted, with where the rollups count it and whether it gets a raw row. */
export interface QueuedRejection extends Rejection {
  readonly rollupModel: string;
  readonly raw: boolean;
}

export function spendOfBegin(entry: PendingEntry): SpendChange {
  return {
    keyId: entry.keyId,
    tenantId: entry.tenantId,
    day: calendarDay(entry.createdAt),
    microUsd: entry.estCostMicros,
    endUser: entry.endUser,
    tags: entry.tags,
    session: entry.session,
  };
}

export function spendOfContribution(contribution: Contribution, microUsd: number): SpendChange {
  return {
    keyId: contribution.keyId,
    tenantId: contribution.tenantId,
    day: contribution.day,
    microUsd,
    endUser: contribution.endUser,
    tags: contribution.tags,
    session: contribution.session,
  };
}

/** A pending row written by an earlier process (or before a restart) still settles correctly. */
export function loadContribution(statements: LedgerStatements, requestId: string): Contribution | undefined {
  const row = statements.contributionOf.get(requestId) as
    | {
        key_id: string;
        tenant_id: string | null;
        created_at: number;
        model: string;
        est_prompt_tokens: number;
        est_completion_tokens: number;
        est_cost_micros: number;
        end_user: string | null;
        tags: string | null;
        session: string | null;
        rollup_folded: number | null;
      }
    | undefined;
  if (row === undefined) return undefined;
  return contributionOf(
    {
      keyId: row.key_id,
      tenantId: row.tenant_id,
      createdAt: row.created_at,
      model: row.model,
      estPromptTokens: row.est_prompt_tokens,
      estCompletionTokens: row.est_completion_tokens,
      estCostMicros: row.est_cost_micros,
      endUser: row.end_user ?? undefined,
      tags: decodeTags(row.tags),
      session: row.session ?? undefined,
    },
    row.rollup_folded ?? 0,
  );
}
