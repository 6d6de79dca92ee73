/**
 * Stage 6, settle: every request that passed authentication ends here, once.
 *
 * - {@link settleForwarded}: a request that was admitted (its pending row is
 *   committed) is settled exactly once — the ledger row gets its actual
 *   usage and cost, the buckets and shared budgets move from the reservation
 *   to that cost — whichever of forward or relay saw it end, however often.
 * - {@link settleRefused}: a request refused before forwarding becomes one
 *   `rejected`/`invalid_request` row with no cost.
 * Both then tell the observers (metrics, log) through one finished event.
 *
 * What a finished request actually cost ({@link costOfEnding}, pure) — at
 * least what the provider bills for it, and within its reservation unless the
 * upstream reported more (README, "The ledger"):
 * 1. The upstream reported usage (JSON `usage`, final SSE usage chunk, the
 *    Responses API's completion event, Messages' `message_delta`): that is the
 *    bill, whatever happened after. A client that left is still billed this
 *    way: Tollgate reads the answer on until its usage (relay.ts).
 * 2. The upstream answered with an error status: nothing was generated, the
 *    whole reservation is refunded.
 * 3. The answer reached its own end without usage (a JSON answer without a
 *    `usage` block, a stream that finished without a usage chunk: upstreams
 *    that never send one): the prompt (our estimate of it) plus the
 *    completion text it carried, counted with the model's tokenizer.
 * 4. The upstream accepted the request but its usage is unknown — a stream
 *    that broke, sent an error event or went silent, an answer that never
 *    came, a stream cut at its cost cap, a drain that had to stop, a
 *    shutdown: the reservation (the prompt plus the completion reserved at
 *    admission), never below the completion text counted. Hidden output
 *    (reasoning, thinking) cannot be counted, and the provider bills it up
 *    to the output limit the reservation covers.
 * 5. The request never reached the upstream (connection refused or timed
 *    out, or the client left first): nothing.
 */
import type { TollgateError } from '../domain/errors.js';
import type { Estimate } from '../estimate/index.js';
import { dialectOf } from '../dialects/index.js';
import { costMicroUsd, toolCostMicroUsd } from '../estimate/prices.js';
import type { Completion, RejectionReason, UsageSource } from '../storage/ledger.js';
import type { Usage } from '../dialects/usage.js';
import type { AdmittedRequest, Ending, RequestContext } from './context.js';
import type { Attribution } from '../endusers/attribution.js';
import { refusedRequestSession } from '../endusers/session.js';
import { exactNames } from '../endusers/checks.js';
import type { PipelineDeps } from './deps.js';

export interface Settlement {
  readonly usage: Usage;
  readonly costMicros: number;
  readonly source: UsageSource;
}

export interface CostInput {
  readonly estimate: Estimate;
  /** Usage the upstream reported, if it did. */
  readonly reported: Usage | undefined;
  /** The prompt's usage the upstream reported before its answer ended without its final usage (Messages' `message_start`). */
  readonly reportedPrompt?: Usage | undefined;
  /** Did the upstream take the request (a 2xx answer, or no answer yet when it ended)? */
  readonly accepted: boolean;
  /** Did the upstream answer with an error status? */
  readonly upstreamError: boolean;
  /** Did the answer reach its own end (a whole JSON body, a stream's terminal event) — rule 3 — or not — rule 4? */
  readonly complete: boolean;
  /** Completion text the answer carried before it ended (rules 3 and 4). */
  readonly streamedText: string;
  /** Completion tokens (all choices) reserved at admission: what an unfinished answer is billed (rule 4). */
  readonly reservedCompletionTokens: number;
  /** Tokens of completion text, for the request's model. */
  readonly countTokens: (text: string) => number;
  /** The answering upstream's reported cost (`usage.cost`) is the bill (OpenRouter). */
  readonly useReportedCost?: boolean;
}

const NOTHING: Usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };

/**
 * What a finished request actually cost, by the rules above. Pure. Every dimension is priced
 * (prices.ts): the tier the answer says it used (the one asked for when it does not say), audio
 * tokens, built-in tool calls at the request's tool rates, reasoning as part of the completion.
 */
export function costOfEnding(input: CostInput): Settlement {
  const { estimate } = input;
  const askedTier = estimate.serviceTier === 'standard' ? undefined : estimate.serviceTier;
  // Chat search models search once per request; their usage does not list the call.
  const perRequest = Object.keys(estimate.toolCallsPerRequest).length > 0 ? { toolCalls: estimate.toolCallsPerRequest } : {};
  const priced = (usage: Usage, source: UsageSource): Settlement => ({ usage, costMicros: costMicroUsd(usage, estimate.price, estimate.toolRates), source });
  const { reported } = input;
  if (reported !== undefined) {
    const tier = reported.serviceTier ?? askedTier;
    const addCalls = reported.toolCalls === undefined && perRequest.toolCalls !== undefined;
    // The usage as reported when it lacks nothing: a copy is spreads through V8's runtime (context.ts, Whole).
    const usage: Usage =
      !addCalls && tier === reported.serviceTier
        ? reported
        : { ...(addCalls ? perRequest : {}), ...reported, ...(tier === undefined ? {} : { serviceTier: tier }) };
    const reportedCost = input.useReportedCost === true ? reported.reportedCostMicros : undefined;
    return reportedCost === undefined ? priced(usage, 'reported') : { usage, costMicros: reportedCost, source: 'reported' };
  }
  if (input.upstreamError || !input.accepted) {
    return { usage: NOTHING, costMicros: 0, source: 'none' };
  }
  const counted = input.streamedText === '' ? 0 : input.countTokens(input.streamedText);
  const prompt = input.reportedPrompt === undefined ? undefined : promptSide(input.reportedPrompt, askedTier);
  if (input.complete) {
    const base = prompt ?? {
      promptTokens: estimate.promptTokens,
      cachedTokens: 0,
      ...(askedTier === undefined ? {} : { serviceTier: askedTier }),
      ...perRequest,
    };
    return priced({ ...base, completionTokens: counted, reasoningTokens: 0 }, 'counted');
  }
  // Rule 4: the completion reserved, hidden output included; more only if more was visibly sent.
  const completionTokens = Math.max(input.reservedCompletionTokens, counted);
  if (prompt !== undefined) return priced({ ...prompt, completionTokens, reasoningTokens: 0 }, 'reserved');
  // Priced as admission priced the reservation (estimate-body.ts, reservationCost), so never above it at the same price.
  const { audioCompletion, serviceTier, ...reserved } = estimate.reservationBase;
  const tier = serviceTier === 'standard' ? {} : { serviceTier };
  return priced(
    { ...reserved, ...tier, cachedTokens: 0, completionTokens, reasoningTokens: 0, audioCompletionTokens: audioCompletion ? completionTokens : 0 },
    'reserved',
  );
}

/** The prompt's part of a usage the upstream reported (its output not final yet). */
function promptSide(usage: Usage, askedTier: string | undefined): Omit<Usage, 'completionTokens' | 'reasoningTokens'> {
  const { completionTokens: _completion, reasoningTokens: _reasoning, audioCompletionTokens: _audio, reportedCostMicros: _cost, ...prompt } = usage;
  const tier = usage.serviceTier ?? askedTier;
  return { ...prompt, ...(tier === undefined ? {} : { serviceTier: tier }) };
}

type SettleDeps = Pick<PipelineDeps, 'ledger' | 'events' | 'now'> & Pick<Partial<PipelineDeps>, 'responses' | 'open'>;

/** The `error_code` of a request Tollgate stopped at shutdown before its usage came. */
export const SHUTDOWN_ERROR_CODE = 'proxy_shutdown';

/**
 * Stops a request whose answer Tollgate can no longer wait for (a shutdown): it is settled at
 * once — its usage unknown, so at its reservation (rule 4), as `upstream_interrupted` with
 * {@link SHUTDOWN_ERROR_CODE} whether or not its client had left — and its upstream aborted.
 */
export function stopForwarded(request: AdmittedRequest, ending: Partial<Ending>, deps: SettleDeps): void {
  settleForwarded(
    request,
    {
      outcome: 'upstream_interrupted',
      status: null,
      accepted: true,
      usage: undefined,
      complete: false,
      streamedText: '',
      firstTokenAt: undefined,
      upstreamRequestId: undefined,
      errorCode: SHUTDOWN_ERROR_CODE,
      ...ending,
    },
    deps,
  );
  request.upstreamAbort.abort();
}

/**
 * Settles an admitted request at its actual cost — exactly once, whoever calls.
 * A background Response whose usage is not known yet stays reserved: the
 * poller (src/responses) settles it later through here, without `responses`.
 */
export function settleForwarded(request: AdmittedRequest, ending: Ending, deps: SettleDeps): void {
  if (request.settled) return;
  if (deps.responses?.deferSettlement(request, ending) === true) {
    deps.open?.done(request); // the poller settles it
    return;
  }
  request.settled = true;
  const { facts, answered } = request;
  // Billed at the price of the upstream that answered; reserved at the dearest that might have.
  const estimate = answered?.price === undefined ? request.estimate : repriced(request.estimate, answered.price);
  const completedAt = deps.now();
  const cost = costOfEnding({
    useReportedCost: answered?.usageCost === true,
    estimate,
    reported: ending.usage,
    reportedPrompt: ending.promptUsage,
    accepted: ending.accepted,
    // An error event inside a 200 stream is not an error status: what was generated before it is billed.
    upstreamError: ending.status !== null && (ending.status < 200 || ending.status >= 300),
    complete: ending.complete === true,
    streamedText: ending.streamedText,
    reservedCompletionTokens: request.reservation.completionTokens,
    countTokens: (text) => ending.countedTokens ?? dialectOf(request.endpoint).countCompletion(text, facts.model),
  });
  const completion: Completion = {
    requestId: request.requestId,
    completedAt,
    status: ending.outcome,
    httpStatus: ending.status,
    promptTokens: cost.usage.promptTokens,
    cachedTokens: cost.usage.cachedTokens,
    completionTokens: cost.usage.completionTokens,
    reasoningTokens: cost.usage.reasoningTokens,
    audioPromptTokens: cost.usage.audioPromptTokens ?? 0,
    audioCompletionTokens: cost.usage.audioCompletionTokens ?? 0,
    cacheWrite5mTokens: cost.usage.cacheWrite5mTokens ?? 0,
    cacheWrite1hTokens: cost.usage.cacheWrite1hTokens ?? 0,
    serviceTier: cost.usage.serviceTier ?? null,
    toolCostMicros: toolCostMicroUsd(cost.usage.toolCalls, estimate.toolRates),
    costMicros: cost.costMicros,
    usageSource: cost.source,
    latencyMs: completedAt - request.startedAt,
    ttftMs: ending.firstTokenAt === undefined ? null : ending.firstTokenAt - request.startedAt,
    upstreamRequestId: ending.upstreamRequestId ?? null,
    errorCode: ending.errorCode ?? null,
    ...(answered === undefined
      ? {}
      : {
          upstream: answered.upstream,
          attempts: answered.attempts.filter((a) => a.outcome !== 'skipped').length,
          billedAttempts: answered.attempts.filter((a) => a.billed).length,
        }),
  };
  deps.ledger.complete(completion);
  request.costMicros = completion.costMicros;
  request.admission.settle({ tokens: completion.promptTokens + completion.completionTokens, microUsd: completion.costMicros });
  deps.responses?.settled(request, ending);
  deps.open?.done(request);
  deps.events.emit({
    kind: 'settled',
    requestId: request.requestId,
    endpoint: request.endpoint,
    caller: request.caller,
    model: facts.model,
    stream: facts.stream,
    startedAt: request.startedAt,
    completedAt,
    decisionMs: request.admission.decisionMs,
    outcome: ending.outcome,
    status: ending.status,
    estimate,
    usage: cost.usage,
    costMicros: cost.costMicros,
    usageSource: cost.source,
    sentAt: request.sentAt,
    ttftMs: completion.ttftMs,
    upstreamRequestId: completion.upstreamRequestId,
    errorCode: completion.errorCode,
    ...(answered === undefined ? {} : { upstream: answered.upstream, attempts: answered.attempts }),
  });
}

/**
 * The estimate at another price. A copy whose `price` is then set: setting a field the copy has is
 * cheap, where a literal defining it after a spread is not in Node 20 (context.ts, Whole).
 */
function repriced(estimate: Estimate, price: Estimate['price']): Estimate {
  const copy: { -readonly [K in keyof Estimate]: Estimate[K] } = { ...estimate };
  copy.price = price;
  return copy;
}

/** How a refused request is filed. */
export interface RefusalRecord {
  readonly model: string;
  readonly stream: boolean;
  /** `rejected` by a limit, budget or policy; `invalid_request` for a bad body. */
  readonly status: 'rejected' | 'invalid_request';
  readonly reason: RejectionReason;
  readonly estimate?: Estimate | undefined;
  readonly decisionMs?: number | undefined;
  /** Known once the body was read (refusals by admission): the end user's and tags' rollups count it too. */
  readonly attribution?: Attribution | undefined;
}

/** Records a request refused before it went upstream: one ledger row with no cost. */
export function settleRefused(request: RequestContext, refusal: TollgateError, record: RefusalRecord, deps: SettleDeps): void {
  const { caller } = request;
  deps.ledger.reject({
    requestId: request.requestId,
    keyId: caller.key.id,
    tenantId: caller.key.tenantId,
    createdAt: request.startedAt,
    endpoint: request.endpoint,
    model: record.model,
    stream: record.stream,
    status: record.status,
    httpStatus: refusal.status,
    errorCode: refusal.code,
    reason: record.reason,
    estPromptTokens: record.estimate?.promptTokens ?? 0,
    estCompletionTokens: record.estimate?.completionTokensReserved ?? 0,
    estCostMicros: record.estimate?.reservedMicroUsd ?? 0,
    endUser: record.attribution?.endUser,
    tags: record.attribution?.tags,
    session: record.attribution === undefined ? refusedRequestSession(request.client.headers) : record.attribution.session,
    exact: record.attribution === undefined ? undefined : exactNames(caller),
  });
  deps.events.emit({
    kind: 'refused',
    requestId: request.requestId,
    endpoint: request.endpoint,
    caller,
    model: record.model,
    stream: record.stream,
    startedAt: request.startedAt,
    completedAt: deps.now(),
    decisionMs: record.decisionMs,
    code: refusal.code,
    httpStatus: refusal.status,
    reason: record.reason,
  });
}
