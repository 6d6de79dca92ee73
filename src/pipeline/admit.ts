/**
 * Stage 3, admit: the one atomic step between estimating a request and
 * sending it. {@link admit} takes the request's cost from every bucket it
 * belongs to (key, tenant, global), reserves it in every budget, and records
 * the pending ledger row — all of it, or none of it:
 *
 * 1. the limiter takes from every bucket or from none (it may wait on Redis);
 * 2. a request a budget or a cost cap bounds is planned at its worst case —
 *    every choice's largest completion — or, when that does not fit, at the
 *    largest output limit that does (src/budgets/output-cap.ts), which is
 *    then sent as the request's own limit;
 * 3. budgets shared through Redis are reserved in every level or in none;
 * 4. then, with no await in between, the budgets this process checks from its
 *    own ledger are checked and the pending row is queued — so no request
 *    admitted by this process can slip between another's budget check and
 *    its record;
 * 5. the row must be committed before the request may go upstream.
 *
 * A refusal at any step gives back what the earlier steps took and files the
 * request as refused; a row that cannot be written gives everything back and
 * answers 503, so nothing is ever forwarded unrecorded.
 */
import { firstHeader } from '../http/client-request.js';
import { affordable, budgetChecksFor, checkBudgets, type BudgetDecision } from '../budgets/check.js';
import { planOutput, reservationOf, usefulMinimum, type OutputPlan } from '../budgets/output-cap.js';
import { reserveSharedBudgets, type SharedOutcome } from '../budgets/shared-budgets.js';
import { attributedBudgetChecks, endUserBindings, exactNames } from '../endusers/checks.js';
import { sessionBindings, sessionBudgetChecks } from '../endusers/session-checks.js';
import { TollgateError } from '../domain/errors.js';
import { bindingsFor } from '../limits/index.js';
import { buildRateLimitHeaders, computeSettlement, createDemands, type Demand, type LimitBinding, type Ticket } from '../limits/index.js';
import type { Admission, AdmittedRequest, EstimatedRequest, Whole } from './context.js';
import type { PipelineDeps } from './deps.js';
import { dialectOf } from '../dialects/index.js';
import { UpstreamStop } from '../upstreams/upstream-stop.js';
import { AdmissionRefused, budgetHeaders, budgetRefusal, costCapRefusal, limiterUnavailable, limitRefusal, runawayRefusal } from './refusals.js';
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

/**
 * Stage 3: the admitted request, recorded as pending — or a refusal (recorded) or a 503.
 * `afterwards` runs once its admission is settled or released (in-flight.ts gives its slot back then).
 */
export async function admit(request: EstimatedRequest, deps: PipelineDeps, afterwards?: () => void): Promise<AdmittedRequest> {
  const { caller, estimate, facts } = request;
  // 1. Every bucket, all or none — none at all for a key, session or end user the runaway stop paused.
  const paused = runawayRefusal(caller, request.attribution);
  const limits: TakenLimits = paused === undefined ? await takeLimits(request, deps) : { ok: false, refusal: paused, decisionMs: undefined };
  const { decisionMs } = limits;
  const refuse = (refusal: AdmissionRefused): never => {
    settleRefused(
      request,
      refusal,
      { model: facts.model, stream: facts.stream, status: 'rejected', reason: refusal.reason, estimate, decisionMs, attribution: request.attribution },
      deps,
    );
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

  // 2. Budgets and the client's cost cap hold the request at its worst case,
  //    or at a smaller output limit when that is all they can pay for.
  const checks = [...budgetChecksFor(caller), ...attributedBudgetChecks(caller, request.attribution), ...sessionBudgetChecks(caller, request.attribution)];
  const bounded = checks.length > 0 || request.maxCostMicroUsd !== undefined;
  const costCap = request.maxCostMicroUsd ?? Number.MAX_SAFE_INTEGER;
  const minOutput = deps.minOutputTokens;
  const wanted = bounded ? planOutput(estimate, costCap, minOutput) : undefined;
  if (bounded && wanted === undefined) {
    refund();
    return refuse(costCapRefusal(estimate, costCap, minOutput, limits.headers));
  }
  const least = wanted === undefined ? 0 : reservationOf(estimate, Math.min(usefulMinimum(estimate, minOutput), wanted.perChoice));

  // 3. Budgets shared through Redis (when configured), all levels or none.
  let shared: SharedOutcome = { kind: 'local' };
  if (deps.sharedBudgets !== undefined && wanted !== undefined && checks.length > 0) {
    try {
      shared = await reserveSharedBudgets(deps.sharedBudgets, checks, wanted.microUsd, least, request.startedAt, (check) =>
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

  // 4. Synchronously: this process's own budget check, then the pending row.
  let plan: OutputPlan | undefined = wanted;
  let decision: BudgetDecision = { ok: true, tightest: undefined };
  if (shared.kind === 'reserved') {
    plan = planOutput(estimate, Math.min(shared.reservation.amount, costCap), minOutput)!;
    shared.reservation.shrink(plan.microUsd);
    decision = shared.decision;
  } else if (shared.kind === 'local' && wanted !== undefined && checks.length > 0) {
    plan = planOutput(estimate, Math.min(costCap, affordable(deps.spend, checks, request.startedAt)), minOutput);
    decision = checkBudgets(deps.spend, checks, plan?.microUsd ?? least, request.startedAt);
  }
  if (!decision.ok) {
    refund();
    return refuse(budgetRefusal(decision, limits.headers));
  }
  const reservedMicroUsd = plan?.microUsd ?? estimate.reservedMicroUsd;
  // The model could outrun a bound Tollgate only assumed (no known output limit): send it as the limit.
  const limited = plan !== undefined && (plan.capped || (estimate.clientMaxCompletion === undefined && estimate.price.maxOutputTokens === undefined));
  const edits = limited ? [...request.edits, ...dialectOf(request.endpoint).outputLimitEdits(request.body, plan!.perChoice)] : request.edits;
  const recorded = deps.ledger.begin({
    requestId: request.requestId,
    keyId: caller.key.id,
    tenantId: caller.key.tenantId,
    createdAt: request.startedAt,
    endpoint: request.endpoint,
    model: facts.model,
    stream: facts.stream,
    estPromptTokens: estimate.promptTokens,
    estCompletionTokens: plan?.completionTokens ?? estimate.completionTokensReserved,
    estCostMicros: reservedMicroUsd,
    priceKnown: estimate.price.known,
    endUser: request.attribution.endUser,
    tags: request.attribution.tags,
    session: request.attribution.session,
    exact: exactNames(caller),
  });
  const reservation = shared.kind === 'reserved' ? shared.reservation : undefined;
  let done = false;
  const admission: Admission = {
    headers: admissionHeaders(
      limits.headers,
      decision.tightest,
      plan,
      request.downgradedFrom === undefined ? undefined : `${request.downgradedFrom}->${facts.model}`,
    ),
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
      afterwards?.();
    },
    release() {
      if (done) return;
      done = true;
      refund();
      reservation?.release();
      afterwards?.();
    },
  };

  // 5. On disk before it goes anywhere.
  try {
    await recorded;
  } catch (error) {
    admission.release();
    // A new end user with limits or a budget, past the key's bound of end users today (src/storage/sqlite/name-bound.ts).
    if (error instanceof TollgateError && error.code === 'too_many_end_users') return refuse(new AdmissionRefused('other', error));
    throw new TollgateError('ledger_unavailable', 'The request could not be recorded, so it was not sent. Try again shortly.', { cause: error });
  }
  const admitted: Whole<AdmittedRequest> = {
    requestId: request.requestId,
    endpoint: request.endpoint,
    startedAt: request.startedAt,
    url: request.url,
    client: request.client,
    caller: request.caller,
    bytes: request.bytes,
    body: request.body,
    layout: request.layout,
    edits,
    facts,
    estimate,
    maxCostMicroUsd: request.maxCostMicroUsd,
    attribution: request.attribution,
    route: request.route,
    downgradedFrom: request.downgradedFrom,
    admission,
    completionAllowance: plan?.completionTokens,
    reservation: { completionTokens: plan?.completionTokens ?? estimate.completionTokensReserved, microUsd: reservedMicroUsd },
    upstreamAbort: new UpstreamStop(),
    sentAt: request.startedAt,
    settled: false,
    costMicros: undefined,
    answered: undefined,
    answerIdentity: undefined,
  };
  return admitted;
}

/** The headers an admitted request's answer carries: its limits', its tightest budget's, an output cap, a downgrade. */
function admissionHeaders(
  limitHeaders: Record<string, string>,
  tightest: Parameters<typeof budgetHeaders>[0],
  plan: OutputPlan | undefined,
  downgraded: string | undefined,
): Record<string, string> {
  // Merged onto a fresh object, not spread into a literal (context.ts, Whole).
  const headers = Object.assign({}, limitHeaders, budgetHeaders(tightest));
  if (plan?.capped === true) headers['x-tollgate-output-capped'] = String(plan.perChoice);
  if (downgraded !== undefined) headers['x-tollgate-downgraded'] = downgraded;
  return headers;
}

/** Takes the request's cost from every bucket it belongs to, or returns the refusal (nothing taken). */
async function takeLimits(request: EstimatedRequest, deps: PipelineDeps): Promise<TakenLimits> {
  const { caller, estimate, client } = request;
  // The end user's own buckets join the key's, tenant's and global ones: all or none.
  const bindings = [
    ...bindingsFor(caller, deps.globalLimits),
    ...endUserBindings(caller, request.attribution),
    ...sessionBindings(caller, request.attribution),
  ];
  if (bindings.length === 0) return { ok: true, bindings, demands: [], ticket: undefined, headers: {}, decisionMs: undefined };
  let query: URLSearchParams | undefined;
  const demands = createDemands(bindings, {
    model: estimate.model,
    reservedTokens: estimate.reservedTokens,
    reservedMicroUsd: estimate.reservedMicroUsd,
    headers: (name) => firstHeader(client.headers[name.toLowerCase()]),
    query: (name) => (query ??= new URL(request.url).searchParams).get(name) ?? undefined,
  });
  const started = performance.now();
  const result = await deps.limiter.acquire(demands);
  const decisionMs = performance.now() - started;
  if (!result.ok) return { ok: false, refusal: limitRefusal(result, caller, bindings, demands), decisionMs };
  return { ok: true, bindings, demands, ticket: result.ticket, headers: buildRateLimitHeaders(result, caller.key.id), decisionMs };
}
