/**
 * The ledger, as the rest of Tollgate sees it (README "The ledger"): the
 * writer the pipeline records every request through, and the spend budgets
 * read. The writer is the node's own SQLite file on every backend
 * (sqlite/ledger-writer.ts): a request is recorded locally before it is
 * forwarded, and on PostgreSQL the shipper (postgres/shipper.ts) moves the
 * file's outbox to the shared ledger, whose rollups are what budgets read
 * across nodes (postgres/spend-source.ts). The rollups of both are built from
 * one declaration (rollup-spec.ts).
 */
import type { BudgetPeriod } from '../domain/calendar.js';

export interface SpendScope {
  readonly level: 'key' | 'tenant';
  readonly id: string;
}

/** An end user's, a tag's or an agent session's spend within one key; `id` is `<keyId>:<name>`. */
export interface AttributedScope {
  readonly level: 'user' | 'tag' | 'session';
  readonly id: string;
  readonly keyId: string;
  readonly name: string;
}

/** Whatever a budget can belong to. */
export type BudgetScope = SpendScope | AttributedScope;

/** True for an end user's, a tag's or a session's scope. */
export function isAttributed(scope: BudgetScope): scope is AttributedScope {
  return scope.level === 'user' || scope.level === 'tag' || scope.level === 'session';
}

/** The change a ledger write makes to the spend of a key (and its tenant). */
export interface SpendChange {
  readonly keyId: string;
  readonly tenantId: string | null;
  /** Calendar day the row is filed under (YYYY-MM-DD). */
  readonly day: string;
  readonly microUsd: number;
  /** The request's end user and tags, when it had any. */
  readonly endUser?: string | null | undefined;
  readonly tags?: readonly string[] | undefined;
  /** The request's agent session, when it had one. */
  readonly session?: string | null | undefined;
}

/** The UTC days a budget read covers. */
export interface SpendRead {
  readonly since: string;
  readonly until: string;
}

/** Told of every change to spend as it is queued and as it commits (budgets). */
export interface SpendListener {
  queuedChange(change: SpendChange): void;
  committedChange(change: SpendChange): void;
  droppedChange(change: SpendChange): void;
}

export interface PendingEntry {
  readonly requestId: string;
  readonly keyId: string;
  readonly tenantId: string | null;
  readonly createdAt: number;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: boolean;
  readonly estPromptTokens: number;
  readonly estCompletionTokens: number;
  readonly estCostMicros: number;
  readonly priceKnown: boolean;
  /** The end user the request was made for, and its tags (src/endusers/attribution.ts). */
  readonly endUser?: string | undefined;
  readonly tags?: readonly string[] | undefined;
  /** The agent session the request belongs to (src/endusers/session.ts). */
  readonly session?: string | undefined;
  /**
   * Names the key's policy needs exact rollup rows for (src/endusers/checks.ts): an end user
   * with limits or budgets of its own, budgeted tags. Never counted under `(other)`.
   */
  readonly exact?: { readonly endUser: boolean; readonly tags: readonly string[] } | undefined;
}

/** `cut_at_cost_cap`: Tollgate ended a stream whose completion reached what its budget or cost cap allows. */
export type FinalStatus = 'ok' | 'upstream_error' | 'client_aborted' | 'upstream_interrupted' | 'upstream_timeout' | 'cut_at_cost_cap';

/**
 * reported: usage from the upstream; counted: from the answer's text; reserved: the request's
 * reservation (its usage is unknown: src/pipeline/settle.ts, rule 4); none: nothing was generated.
 */
export type UsageSource = 'reported' | 'counted' | 'reserved' | 'none';

export interface Completion {
  readonly requestId: string;
  readonly completedAt: number;
  readonly status: FinalStatus;
  readonly httpStatus: number | null;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly reasoningTokens: number;
  /** Audio parts of the prompt and completion, when the upstream reported any. */
  readonly audioPromptTokens?: number;
  readonly audioCompletionTokens?: number;
  /** Parts of the prompt written to Anthropic's prompt cache, by how long they are kept (priced at a premium). */
  readonly cacheWrite5mTokens?: number;
  readonly cacheWrite1hTokens?: number;
  /** The service tier the upstream says it used. */
  readonly serviceTier?: string | null;
  /** Part of costMicros paid for built-in tool calls. */
  readonly toolCostMicros?: number;
  readonly costMicros: number;
  readonly usageSource: UsageSource;
  readonly latencyMs: number;
  readonly ttftMs: number | null;
  readonly upstreamRequestId: string | null;
  readonly errorCode: string | null;
  /** The upstream that answered (or was tried last); null when not routed. */
  readonly upstream?: string | null;
  /** Upstreams actually tried (fallbacks included). */
  readonly attempts?: number | null;
  /** Of those, the failed tries the upstream may bill although another answered. */
  readonly billedAttempts?: number | null;
}

export type RejectionReason = 'rate_limit' | 'budget' | 'other';

export interface Rejection {
  readonly requestId: string;
  readonly keyId: string;
  readonly tenantId: string | null;
  readonly createdAt: number;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: boolean;
  /** `rejected` by a limit/budget/policy, or `invalid_request` (bad body). */
  readonly status: 'rejected' | 'invalid_request';
  readonly httpStatus: number;
  readonly errorCode: string;
  readonly reason: RejectionReason;
  readonly estPromptTokens: number;
  readonly estCompletionTokens: number;
  readonly estCostMicros: number;
  /** When known (refusals after the body was read): counted in the end user's and tags' rollups too. */
  readonly endUser?: string | undefined;
  readonly tags?: readonly string[] | undefined;
  readonly session?: string | undefined;
  /** As PendingEntry's: a budgeted tag keeps its own row even for a refusal (the policy names few). */
  readonly exact?: { readonly endUser: boolean; readonly tags: readonly string[] } | undefined;
}

/** What the pipeline records requests through (sqlite/ledger-writer.ts). */
export interface LedgerWriter {
  /** Records a request as pending; resolves once the row is on disk (the request may then be forwarded). */
  begin(entry: PendingEntry): Promise<void>;
  /** Settles a pending request, once. */
  complete(completion: Completion): void;
  /** Records a request refused before it reached the upstream. */
  reject(rejection: Rejection): void;
  /** Operations waiting for the next commit. */
  readonly queueDepth: number;
  /** Commits everything queued so far; false when a commit failed and work is still queued. */
  flush(): boolean;
  /** Refuses further `begin`s and flushes; false when something could not be written. */
  close(): boolean;
}

/** Spend read from this node's own rollups (sqlite/budget-spend.ts). */
export interface SpendReads {
  read(scope: BudgetScope, period: BudgetPeriod, read: SpendRead): number;
}

/**
 * Spend kept elsewhere than this node's rollups (PostgreSQL: every node's,
 * postgres/spend-source.ts): undefined when not known yet, and the node's
 * own rollups stand in (src/budgets/spend-tracker.ts).
 */
export interface SpendAcrossNodes {
  read(scope: BudgetScope, period: BudgetPeriod, read: SpendRead): number | undefined;
}

/**
 * The node's ledger writer on `backend`: the SQLite file on every backend (a
 * request is on the node's disk before it is forwarded). With PostgreSQL its
 * outbox queues every row for the shipper from the first write; without, a
 * node that was a replica stops queueing (sqlite/outbox.ts).
 */
