/**
 * Stage 3, admit: the one atomic step between estimating a request and
 * sending it. {@link admit} takes the request's cost from every bucket it
 * belongs to (key, tenant, global), reserves it in every budget, and records
 * the pending ledger row — all of it, or none of it:
 *
 * 1. the limiter takes from every bucket or from none (it may wait on Redis);
 * 2. budgets shared through Redis are reserved in every level or in none;
 * 3. then, with no await in between, the budgets this process checks from its
 *    own ledger are checked and the pending row is queued — so no request
 *    admitted by this process can slip between another's budget check and
 *    its record;
 * 4. the row must be committed before the request may go upstream.
 *
 * A refusal at any step gives back what the earlier steps took and files the
 * request as refused; a row that cannot be written gives everything back and
 * answers 503, so nothing is ever forwarded unrecorded.
 */
import { budgetChecksFor, checkBudgets, type BudgetDecision } from '../budgets/check.js';
import { reserveSharedBudgets, type SharedOutcome } from '../budgets/redis-budgets.js';
import { TollgateError } from '../errors.js';
import { bindingsFor } from '../keys/caller.js';
import { buildRateLimitHeaders, computeSettlement, createDemands, type Demand, type LimitBinding, type Ticket } from '../limits/index.js';
import type { Admission, AdmittedRequest, EstimatedRequest } from './context.js';
import type { PipelineDeps } from './deps.js';
import { type AdmissionRefused, budgetHeaders, budgetRefusal, limiterUnavailable, limitRefusal } from './refusals.js';
import { settleRefused } from './settle.js';

/** Buckets taken for a request (how to settle or refund them), or the limiter's refusal (nothing taken). */
type TakenLimits = (Taken | { readonly ok: false; readonly refusal: AdmissionRefused }) & { readonly decisionMs: number | undefined };

interface Taken {
  readonly ok: true;
  readonly bindings: readonly LimitBinding[];
  readonly demands: readonly Demand[];
  readonly ticket: Ticket | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

/** Stage 3: the admitted request, recorded as pending — or a refusal (recorded) or a 503. */
export async function admit(request: EstimatedRequest, deps: PipelineDeps): Promise<AdmittedRequest> {
  const { caller, estimate, facts } = request;
  // 1. Every bucket, all or none.
  const limits = await takeLimits(request, deps);
  const { decisionMs } = limits;
  const refuse = (refusal: AdmissionRefused): never => {
    settleRefused(request, refusal, { model: facts.model, stream: facts.stream, status: 'rejected', reason: refusal.reason, estimate, decisionMs }, deps);
    throw refusal;
  };
  if (!limits.ok) return refuse(limits.refusal);
  const refund = (): void => {
    if (limits.ticket !== undefined)
      deps.limiter.settle(
        limits.ticket,
        limits.demands.map(() => 0),
      );
  };

  // 2. Budgets shared through Redis (when configured), all levels or none.
  const checks = budgetChecksFor(caller);
  let shared: SharedOutcome = { kind: 'local' };
  if (deps.sharedBudgets !== undefined && checks.length > 0) {
    try {
      shared = await reserveSharedBudgets(deps.sharedBudgets, checks, estimate.reservedMicroUsd, request.startedAt, (check) =>
        deps.spend.spent(check.scope, check.budget.period, request.startedAt),
      );
    } catch (error) {
      refund();
      throw error;
    }
    if (shared.kind === 'unavailable') {
      refund();
      return refuse(limiterUnavailable('Budgets', limits.headers));
    }
    if (shared.kind === 'refused') {
      refund();
      return refuse(budgetRefusal(shared.decision, limits.headers));
    }
  }

  // 3. Synchronously: this process's own budget check, then the pending row.
  const decision: BudgetDecision =
    shared.kind === 'reserved'
      ? shared.decision
      : shared.kind === 'unchecked'
        ? { ok: true, tightest: undefined }
        : checkBudgets(deps.spend, checks, estimate.reservedMicroUsd, request.startedAt);
  if (!decision.ok) {
    refund();
    return refuse(budgetRefusal(decision, limits.headers));
  }
  const recorded = deps.ledger.begin({
    requestId: request.requestId,
    keyId: caller.key.id,
    tenantId: caller.key.tenantId,
    createdAt: request.startedAt,
    endpoint: request.endpoint,
    model: facts.model,
    stream: facts.stream,
    estPromptTokens: estimate.promptTokens,
    estCompletionTokens: estimate.completionTokensReserved,
    estCostMicros: estimate.reservedMicroUsd,
    priceKnown: estimate.price.known,
  });
  const reservation = shared.kind === 'reserved' ? shared.reservation : undefined;
  let done = false;
  const admission: Admission = {
    headers: { ...limits.headers, ...budgetHeaders(decision.tightest) },
    decisionMs,
    settle(usage) {
      if (done) return;
      done = true;
      if (limits.ticket !== undefined) {
        deps.limiter.settle(
          limits.ticket,
          computeSettlement(limits.bindings, limits.demands, { model: estimate.model, tokens: usage.tokens, microUsd: usage.microUsd }),
        );
      }
      reservation?.settle(usage.microUsd);
    },
    release() {
      if (done) return;
      done = true;
      refund();
      reservation?.release();
    },
  };

  // 4. On disk before it goes anywhere.
  try {
    await recorded;
  } catch (error) {
    admission.release();
    throw new TollgateError('ledger_unavailable', 'The request could not be recorded, so it was not sent. Try again shortly.', { cause: error });
  }
  return { ...request, admission, sentAt: request.startedAt, settled: false };
}

/** Takes the request's cost from every bucket it belongs to, or returns the refusal (nothing taken). */
async function takeLimits(request: EstimatedRequest, deps: PipelineDeps): Promise<TakenLimits> {
  const { caller, estimate, client } = request;
  const bindings = bindingsFor(caller, deps.globalLimits);
  if (bindings.length === 0) return { ok: true, bindings, demands: [], ticket: undefined, headers: {}, decisionMs: undefined };
  let query: URLSearchParams | undefined;
  const demands = createDemands(bindings, {
    model: estimate.model,
    reservedTokens: estimate.reservedTokens,
    reservedMicroUsd: estimate.reservedMicroUsd,
    headers: (name) => single(client.headers[name.toLowerCase()]),
    query: (name) => (query ??= new URL(request.url).searchParams).get(name) ?? undefined,
  });
  const started = performance.now();
  const result = await deps.limiter.acquire(demands);
  const decisionMs = performance.now() - started;
  if (!result.ok) return { ok: false, refusal: limitRefusal(result, caller, bindings, demands), decisionMs };
  return { ok: true, bindings, demands, ticket: result.ticket, headers: buildRateLimitHeaders(result, caller.key.id), decisionMs };
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
