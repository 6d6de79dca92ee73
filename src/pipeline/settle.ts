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
 * What a finished request actually cost ({@link costOfEnding}, pure):
 * 1. The upstream reported usage (JSON `usage`, final SSE usage chunk, the
 *    Responses API's completion event): that is the bill, whatever happened
 *    after.
 * 2. The upstream answered with an error status: nothing was generated, the
 *    whole reservation is refunded.
 * 3. The upstream accepted the request (answered 200, or was still working on
 *    it) but the answer ended before usage arrived — client abort, broken or
 *    silent stream, timeout while it worked: the prompt (our estimate of it)
 *    plus the completion text actually streamed, counted with the model's
 *    tokenizer.
 * 4. The request never reached the upstream (connection refused or timed
 *    out): nothing.
 */
import type { TollgateError } from '../errors.js';
import { countStreamedTokens, type Estimate } from '../estimate/index.js';
import { costMicroUsd, toolCostMicroUsd } from '../estimate/prices.js';
import type { Completion, RejectionReason, UsageSource } from '../ledger/writer.js';
import type { Usage } from '../upstreams/usage.js';
import type { AdmittedRequest, Ending, RequestContext } from './context.js';
import type { Attribution } from '../endusers/attribution.js';
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
  /** Did the upstream take the request (a 2xx answer, or no answer yet when it ended)? */
  readonly accepted: boolean;
  /** Did the upstream answer with an error status? */
  readonly upstreamError: boolean;
  /** Completion text that was streamed before the end (rule 3). */
  readonly streamedText: string;
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
  if (input.reported !== undefined) {
    const tier = input.reported.serviceTier ?? askedTier;
    const usage: Usage = {
      ...(input.reported.toolCalls === undefined ? perRequest : {}),
      ...input.reported,
      ...(tier === undefined ? {} : { serviceTier: tier }),
    };
    const reportedCost = input.useReportedCost === true ? input.reported.reportedCostMicros : undefined;
    return { usage, costMicros: reportedCost ?? costMicroUsd(usage, estimate.price, estimate.toolRates), source: 'reported' };
  }
  if (input.upstreamError || !input.accepted) {
    return { usage: NOTHING, costMicros: 0, source: 'none' };
  }
  const completionTokens = input.streamedText === '' ? 0 : input.countTokens(input.streamedText);
  const usage: Usage = {
    promptTokens: estimate.promptTokens,
    cachedTokens: 0,
    completionTokens,
    reasoningTokens: 0,
    ...(askedTier === undefined ? {} : { serviceTier: askedTier }),
    ...perRequest,
  };
  return { usage, costMicros: costMicroUsd(usage, estimate.price, estimate.toolRates), source: 'counted' };
}

type SettleDeps = Pick<PipelineDeps, 'ledger' | 'events' | 'now'> & Pick<Partial<PipelineDeps>, 'responses'>;

/**
 * Settles an admitted request at its actual cost — exactly once, whoever calls.
 * A background Response whose usage is not known yet stays reserved: the
 * poller (src/responses) settles it later through here, without `responses`.
 */
export function settleForwarded(request: AdmittedRequest, ending: Ending, deps: SettleDeps): void {
  if (request.settled) return;
  if (deps.responses?.deferSettlement(request, ending) === true) return;
  request.settled = true;
  const { facts, answered } = request;
  // Billed at the price of the upstream that answered; reserved at the dearest that might have.
  const estimate = answered?.price === undefined ? request.estimate : { ...request.estimate, price: answered.price };
  const completedAt = deps.now();
  const cost = costOfEnding({
    useReportedCost: answered?.usageCost === true,
    estimate,
    reported: ending.usage,
    accepted: ending.accepted,
    // An error event inside a 200 stream is not an error status: what streamed before it was generated.
    upstreamError: ending.status !== null && (ending.status < 200 || ending.status >= 300),
    streamedText: ending.streamedText,
    countTokens: (text) => countStreamedTokens(request.endpoint, text, facts.model),
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
  request.admission.settle({ tokens: completion.promptTokens + completion.completionTokens, microUsd: completion.costMicros });
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
