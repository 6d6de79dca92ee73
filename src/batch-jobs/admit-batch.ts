/**
 * A batch is admitted whole, before the upstream sees it: its worst case at
 * the batch price (every line at its largest completion, src/batches/) is
 * taken in one all-or-none step, as a synchronous request's is
 * (src/pipeline/admit.ts), and recorded as one pending ledger row:
 *
 * 1. one request from every request bucket, and the batch's tokens and
 *    dollars from every token and USD bucket of a day — a batch runs over
 *    hours, so per-second, -minute and -hour buckets, which pace what reaches
 *    the provider now, do not pay for it (docs/batches.md);
 * 2. the worst case from every budget of the key and its tenant, in Redis
 *    when budgets are shared, else against this node's ledger — never less:
 *    a batch cannot be cut short as a stream can;
 * 3. the pending row, committed before the batch is created upstream.
 *
 * A refusal at any step gives back what the earlier steps took and files the
 * refusal as a rejected row, like any refused request.
 */
import { budgetChecksFor, checkBudgets } from '../budgets/check.js';
import { reserveSharedBudgets, type BudgetReservation } from '../budgets/shared-budgets.js';
import type { Caller } from '../domain/caller.js';
import type { Endpoint } from '../endpoints.js';
import type { HeaderRecord } from '../http/client-request.js';
import { bindingsFor, buildRateLimitHeaders, computeSettlement, createDemands, type LimitBinding } from '../limits/index.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import { PERIOD_SECONDS } from '../domain/policy.js';
import { firstHeader } from '../http/client-request.js';
import { type AdmissionRefused, budgetRefusal, limiterUnavailable, limitRefusal, runawayRefusal } from '../pipeline/refusals.js';

const DAY_SECONDS = 86_400;

/** What a batch asks to be admitted with. */
export interface BatchAsk {
  readonly caller: Caller;
  readonly requestId: string;
  readonly startedAt: number;
  /** The endpoint its lines go to (its ledger row's). */
  readonly endpoint: Endpoint;
  readonly model: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** The worst case at the batch price, µUSD. */
  readonly costMicros: number;
  readonly headers: HeaderRecord;
  readonly url: string;
}

/** An admitted batch: its rate-limit headers, and the Redis reservation to settle (when budgets are shared). */
export interface AdmittedBatch {
  readonly headers: Readonly<Record<string, string>>;
  readonly reservation: BudgetReservation | undefined;
}

/** The buckets a batch pays into: every request bucket, and token and USD buckets of a day or more. */
export function batchBindings(bindings: readonly LimitBinding[]): LimitBinding[] {
  return bindings.filter(({ limit }) => limit.unit === 'requests' || PERIOD_SECONDS[limit.period] >= DAY_SECONDS);
}

/** Admits the whole batch or throws its refusal (recorded). */
export async function admitBatch(ask: BatchAsk, deps: PipelineDeps): Promise<AdmittedBatch> {
  const { caller } = ask;
  const refuse = (refusal: AdmissionRefused): never => {
    deps.ledger.reject({
      requestId: ask.requestId,
      keyId: caller.key.id,
      tenantId: caller.key.tenantId,
      createdAt: ask.startedAt,
      endpoint: ask.endpoint,
      model: ask.model,
      stream: false,
      status: 'rejected',
      httpStatus: refusal.status,
      errorCode: refusal.code,
      reason: refusal.reason,
      estPromptTokens: ask.promptTokens,
      estCompletionTokens: ask.completionTokens,
      estCostMicros: ask.costMicros,
    });
    throw refusal;
  };
  const paused = runawayRefusal(caller, { endUser: undefined, tags: [] });
  if (paused !== undefined) return refuse(paused);

  // 1. Buckets, all or none; what they took stays taken (the batch's tokens count when it is admitted).
  const bindings = batchBindings(bindingsFor(caller, deps.globalLimits));
  let headers: Record<string, string> = {};
  if (bindings.length > 0) {
    const facts = {
      model: ask.model,
      reservedTokens: ask.promptTokens + ask.completionTokens,
      reservedMicroUsd: ask.costMicros,
      headers: (name: string) => firstHeader(ask.headers[name.toLowerCase()]),
      query: (name: string) => new URL(ask.url).searchParams.get(name) ?? undefined,
    };
    const demands = createDemands(bindings, facts);
    const result = await deps.limiter.acquire(demands);
    if (!result.ok) return refuse(limitRefusal(result, caller, bindings, demands));
    deps.limiter.settle(result.ticket, computeSettlement(bindings, demands, { model: ask.model, tokens: facts.reservedTokens, microUsd: ask.costMicros }));
    headers = buildRateLimitHeaders(result, caller.key.id);
  }

  // 2. Budgets at the worst case, never less.
  const checks = budgetChecksFor(caller);
  let reservation: BudgetReservation | undefined;
  if (checks.length > 0 && deps.sharedBudgets !== undefined) {
    const shared = await reserveSharedBudgets(deps.sharedBudgets, checks, ask.costMicros, ask.costMicros, ask.startedAt, (check) =>
      deps.spend.spent(check.scope, check.budget.period, ask.startedAt),
    );
    if (shared.kind === 'unavailable') return refuse(limiterUnavailable('Budgets', headers));
    if (shared.kind === 'refused') return refuse(budgetRefusal(shared.decision, headers));
    if (shared.kind === 'reserved') reservation = shared.reservation;
  } else if (checks.length > 0) {
    // No await between this check and the row below: no other request of this process slips between.
    const decision = checkBudgets(deps.spend, checks, ask.costMicros, ask.startedAt);
    if (!decision.ok) return refuse(budgetRefusal(decision, headers));
  }

  // 3. The pending row, on disk before the batch goes upstream.
  const recorded = deps.ledger.begin({
    requestId: ask.requestId,
    keyId: caller.key.id,
    tenantId: caller.key.tenantId,
    createdAt: ask.startedAt,
    endpoint: ask.endpoint,
    model: ask.model,
    stream: false,
    estPromptTokens: ask.promptTokens,
    estCompletionTokens: ask.completionTokens,
    estCostMicros: ask.costMicros,
    priceKnown: true,
  });
  try {
    await recorded;
  } catch (error) {
    reservation?.release();
    throw error;
  }
  return { headers, reservation };
}
