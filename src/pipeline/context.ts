/**
 * The request as it crosses the pipeline. Each stage hands the next one what
 * it learned, as a wider type:
 *
 *   authenticate → RequestContext     who is asking, for which endpoint
 *   estimate     → EstimatedRequest   the body, its facts and its reservation
 *   admit        → AdmittedRequest    buckets taken, budgets reserved, pending row committed
 *   forward      → UpstreamResponse   (or settled at once if the upstream failed)
 *   relay        → Response           settled when the answer ends, however it ends
 */
import type { AnswerIdentity } from '../dialects/answer-identity.js';
import type { Attribution } from '../endusers/attribution.js';
import type { Endpoint } from '../endpoints.js';
import type { Estimate } from '../estimate/index.js';
import type { ClientRequest } from '../http/client-request.js';
import type { Caller } from '../domain/caller.js';
import type { FinalStatus } from '../storage/ledger.js';
import type { ResolvedPrice } from '../estimate/prices.js';
import type { BodyEdit, BodyLayout, RequestFacts, RequestFields } from '../estimate/client-body.js';
import type { Route } from '../upstreams/router.js';
import type { UpstreamStop } from '../upstreams/upstream-stop.js';
import type { Usage } from '../dialects/usage.js';

/**
 * Every field of `T`, optional ones included (as undefined): the type of a
 * stage's object literal. Each stage builds its request as one literal of
 * all its fields, not `{ ...request, … }`: in Node 20 (V8 11.3) every
 * property a literal defines after a spread goes through the runtime,
 * ~0.5–0.8 µs each, which the stages paid tens of µs per request for; listed
 * this way, a field added to a stage's type fails to compile until the
 * stages copy it.
 */
export type Whole<T> = { [K in keyof Required<T>]: T[K] };

/** An authenticated request. */
export interface RequestContext {
  readonly requestId: string;
  readonly endpoint: Endpoint;
  /** When Tollgate received it (ms since the epoch). */
  readonly startedAt: number;
  /** The client's URL, query included. */
  readonly url: string;
  readonly client: ClientRequest;
  readonly caller: Caller;
}

/** A request whose body was read and checked, and whose cost was estimated. */
export interface EstimatedRequest extends RequestContext {
  /** The client's bytes as received; forwarded with `edits` spliced in (src/dialects/request-edits.ts, forwardedBody). */
  readonly bytes: Buffer;
  /**
   * The client's own values of the top-level fields stages read (READ_FIELDS in
   * src/estimate/client-body.ts). Nothing else of the body is here: a large
   * body is parsed on a worker thread, never on the event loop.
   */
  readonly body: RequestFields;
  /** Where those fields sit in `bytes`. */
  readonly layout: BodyLayout;
  /** Changes Tollgate makes to the body before forwarding it (a budget's output limit). */
  readonly edits: readonly BodyEdit[];
  readonly facts: RequestFacts;
  readonly estimate: Estimate;
  /** The client's own cap on this request's cost (`x-tollgate-max-cost-usd`), µUSD. */
  readonly maxCostMicroUsd: number | undefined;
  /** The end user and tags the request names (src/endusers). */
  readonly attribution: Attribution;
  /** The upstreams that may answer, in order (absent in tests that build requests by hand: the one upstream). */
  readonly route?: Route;
  /** The model the client asked for, when the key's budget-aware downgrade sent the request to `facts.model` instead. */
  readonly downgradedFrom?: string;
}

/** How one try of one upstream ended (the `outcome` label of tollgate_upstream_attempts_total). */
type AttemptOutcome = 'ok' | 'client_error' | 'rate_limited' | 'server_error' | 'connect_error' | 'timeout' | 'skipped' | 'client_aborted';

export interface Attempt {
  readonly upstream: string;
  readonly outcome: AttemptOutcome;
  /** The upstream may bill this attempt although another one answered (a timeout after sending, a 5xx of an upstream that bills errors). */
  readonly billed: boolean;
}

/** Which upstream answered a forwarded request, what it bills at, and every attempt made. */
interface Answered {
  readonly upstream: string;
  /** The answering upstream's price for the model (the reservation used the dearest candidate's). */
  readonly price: ResolvedPrice | undefined;
  /** Bill at the `usage.cost` the upstream reports (OpenRouter). */
  readonly usageCost: boolean;
  readonly attempts: readonly Attempt[];
}

/** What admission took for a request, and how to give it back. */
export interface Admission {
  /** RateLimit and budget headers for the response. */
  readonly headers: Readonly<Record<string, string>>;
  /** Milliseconds the limiter took to decide (undefined when the caller has no limits). */
  readonly decisionMs: number | undefined;
  /** Settles buckets and shared budgets at what the request actually used (once). */
  settle(usage: { tokens: number; microUsd: number }): void;
  /** Gives everything back: the request was never sent (once). */
  release(): void;
}

/** What admission holds for a request: the completion it reserved (all choices) and the whole reservation's cost. */
interface Reservation {
  readonly completionTokens: number;
  readonly microUsd: number;
}

/** A request recorded as pending and free to go upstream. */
export interface AdmittedRequest extends EstimatedRequest {
  readonly admission: Admission;
  /**
   * What its buckets, budgets and pending row hold: the budget's plan when a budget or cost cap
   * bounds the request, else the estimate's. A request whose usage stays unknown is settled at
   * it (settle.ts, rule 4).
   */
  readonly reservation: Reservation;
  /**
   * Aborts the upstream request. Only Tollgate aborts it — a stream cut at its cost cap, a
   * shutdown — never the client's leaving: then Tollgate reads the answer on until its usage.
   */
  readonly upstreamAbort: UpstreamStop;
  /**
   * Completion tokens (all choices) the answer may carry before a stream is cut,
   * when a budget or cost cap bounds the request; undefined otherwise.
   */
  readonly completionAllowance: number | undefined;
  /** When the request left for the upstream (set by forward). */
  sentAt: number;
  /** Set by settle: a request is settled exactly once. */
  settled: boolean;
  /** Set by settle: what the request cost, as its ledger row says (its receipt: receipt.ts). */
  costMicros?: number;
  /** Set by forward: the upstream that answered (or was tried last) and the attempts. */
  answered?: Answered;
  /** Set by relay when the request is traced: the answer's own id and model (docs/tracing.md). */
  answerIdentity?: AnswerIdentity;
}

/** How a forwarded request ended, as forward or relay saw it. */
export interface Ending {
  readonly outcome: FinalStatus;
  /** The upstream's HTTP status, or null when it never answered. */
  readonly status: number | null;
  /** The upstream took the request (answered 2xx, or was still working when it ended). */
  readonly accepted: boolean;
  /** Usage the upstream reported, if it did. */
  readonly usage: Usage | undefined;
  /** Without `usage`: the prompt's usage the upstream reported before the end (Messages' `message_start`). */
  readonly promptUsage?: Usage | undefined;
  /**
   * The answer reached its own end (a whole JSON body, a stream's terminal event). One that did
   * not, and carried no usage, is settled at the request's reservation (settle.ts, rule 4).
   */
  readonly complete?: boolean;
  /** Completion text the answer carried without its usage (counted, never billed below). */
  readonly streamedText: string;
  /** Tokens of `streamedText` as already counted (a stream watched by its allowance); absent = count it. */
  readonly countedTokens?: number | undefined;
  readonly firstTokenAt: number | undefined;
  readonly upstreamRequestId: string | undefined;
  readonly errorCode: string | undefined;
  /** The Responses API's response id, when the answer carried one (background jobs are settled by it). */
  readonly responseId?: string | undefined;
  /** Ids of the Responses answer's output items, as far as it came: they become the key's (src/pipeline/ownership.ts). */
  readonly outputItemIds?: readonly string[] | undefined;
}
