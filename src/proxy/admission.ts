/**
 * Admission: may this request go upstream, given its key's, tenant's and the
 * global limits and budgets? Orchestration only; the bucket math lives in
 * src/limits, spend in src/ledger.
 *
 * Order matters:
 * 1. the limiter (async: Redis may be involved) takes the request's cost from
 *    every bucket it belongs to, or from none;
 * 2. then, with no await in between, the budgets are checked and the ledger
 *    row is queued — so no request admitted by this process can slip between
 *    another's budget check and its record. A budget refusal refunds the
 *    buckets in full.
 */
import { TollgateError } from '../errors.js';
import type { Estimate } from '../estimate/index.js';
import type { Caller } from '../keys/auth.js';
import { checkBudgets, microUsdHeader, type BudgetCheck, type BudgetDecision } from '../ledger/budgets.js';
import type { SpendTracker } from '../ledger/spend-tracker.js';
import { BudgetStoreUnavailable, type BudgetReservation, type RedisBudgetStore } from '../ledger/redis-budgets.js';
import {
  bindingsForPolicy,
  buildRateLimitHeaders,
  computeSettlement,
  createDemands,
  type AcquireResult,
  type Demand,
  type LimitBinding,
  type Limiter,
  type Ticket,
} from '../limits/index.js';
import { formatMicrosUsd, type LimitSpec } from '../limits/policy.js';
import type { Metrics } from '../metrics.js';
import type { HeaderRecord } from './client-request.js';

export interface AdmissionDeps {
  readonly limiter: Limiter;
  readonly spend: SpendTracker;
  /** Limits over every key at once (from the config file). */
  readonly globalLimits: readonly LimitSpec[];
  readonly metrics: Metrics;
  readonly storeName: 'local' | 'redis';
  /** Keys seen recently (bounded), for sampling their buckets at scrape time. */
  readonly recentCallers?: Map<string, Caller>;
  /** With Redis: budgets shared by every node, whatever database file each has. */
  readonly redisBudgets?: RedisBudgetStore;
  /** What to do with budgets when Redis cannot be asked (as for limits). */
  readonly failMode?: 'local' | 'open' | 'closed';
}

const RECENT_CALLERS = 200;

/** An admitted request: headers for the response, and how to settle it afterwards. */
export interface Admission {
  readonly headers: Record<string, string>;
  /** Settles the buckets with what the request actually used (once). */
  settle(usage: { tokens: number; microUsd: number }): void;
  /** Gives everything back (the request was never sent). */
  release(): void;
}

/** Why admission refused, for the ledger's rejection row. */
export type RefusalKind = 'rate_limit' | 'budget' | 'other';

export class AdmissionRefused extends TollgateError {
  readonly kind: RefusalKind;
  constructor(kind: RefusalKind, error: TollgateError) {
    super(error.code, error.message, { param: error.param, headers: { ...error.headers } });
    this.kind = kind;
  }
}

/** The buckets a caller's request pays into: its key's, its tenant's, and the global ones. */
export function bindingsFor(caller: Caller, globalLimits: readonly LimitSpec[]): LimitBinding[] {
  const bindings = [...bindingsForPolicy('key', caller.key.id, caller.policy.limits)];
  if (caller.tenant !== undefined && caller.tenantPolicy !== undefined) bindings.push(...bindingsForPolicy('tenant', caller.tenant.id, caller.tenantPolicy.limits));
  if (globalLimits.length > 0) bindings.push(...bindingsForPolicy('global', '', globalLimits));
  return bindings;
}

/** The budgets a caller's request counts against. */
export function budgetChecksFor(caller: Caller): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  if (caller.policy.budget !== undefined) checks.push({ scope: { level: 'key', id: caller.key.id }, label: `key ${caller.key.name}`, budget: caller.policy.budget });
  if (caller.tenant !== undefined && caller.tenantPolicy?.budget !== undefined) {
    checks.push({ scope: { level: 'tenant', id: caller.tenant.id }, label: `tenant ${caller.tenant.name}`, budget: caller.tenantPolicy.budget });
  }
  return checks;
}

/**
 * Acquires the request's limits; on success returns a function that, called
 * synchronously, checks the budgets and runs `record` (the ledger begin) —
 * or refunds and throws. Throws {@link AdmissionRefused} for refusals.
 */
export async function acquireLimits(
  deps: AdmissionDeps,
  caller: Caller,
  estimate: Estimate,
  request: { headers: HeaderRecord; query: (name: string) => string | undefined; now: number },
): Promise<(record: () => void) => Admission> {
  const bindings = bindingsFor(caller, deps.globalLimits);
  const recent = deps.recentCallers;
  if (recent !== undefined && bindings.length > 0) {
    recent.delete(caller.key.id);
    recent.set(caller.key.id, caller);
    if (recent.size > RECENT_CALLERS) recent.delete(recent.keys().next().value!);
  }
  let demands: Demand[] = [];
  let result: AcquireResult | undefined;
  if (bindings.length > 0) {
    demands = createDemands(bindings, {
      model: estimate.model,
      reservedTokens: estimate.reservedTokens,
      reservedMicroUsd: estimate.reservedMicroUsd,
      headers: (name) => headerText(request.headers[name.toLowerCase()]),
      query: request.query,
    });
    const started = performance.now();
    result = await deps.limiter.acquire(demands);
    deps.metrics.decisionDuration.observe({ store: deps.storeName }, (performance.now() - started) / 1000);
    if (!result.ok) throw refusalFor(result, caller, bindings, demands);
  }
  const ticket: Ticket | undefined = result?.ok ? result.ticket : undefined;
  const limitHeaders = result === undefined ? {} : buildRateLimitHeaders(result, caller.key.id);
  const refund = (): void => {
    if (ticket !== undefined) deps.limiter.settle(ticket, demands.map(() => 0));
  };

  // Budgets shared through Redis are reserved here (an atomic script per level);
  // otherwise they are checked from the ledger in the synchronous step below.
  const checks = budgetChecksFor(caller);
  let shared: { decision: BudgetDecision; reservation: BudgetReservation | undefined } | undefined;
  let budgetsSkipped = false;
  if (deps.redisBudgets !== undefined && checks.length > 0) {
    try {
      deps.metrics.redisCalls.inc({ op: 'budget' });
      shared = await deps.redisBudgets.reserve(checks, estimate.reservedMicroUsd, request.now, (check) => deps.spend.spent(check.scope, check.budget.period, request.now));
    } catch (error) {
      if (!(error instanceof BudgetStoreUnavailable)) {
        refund();
        throw error;
      }
      deps.metrics.redisFailures.inc({ op: 'budget' });
      if (deps.failMode === 'closed') {
        refund();
        throw new AdmissionRefused('other', new TollgateError('limiter_unavailable', 'Budgets cannot be checked right now (Redis unavailable); try again shortly.', { headers: { ...limitHeaders, 'retry-after': '1' } }));
      }
      // open: admit without budgets; local: check this node's ledger instead.
      budgetsSkipped = deps.failMode === 'open';
    }
    if (shared !== undefined && !shared.decision.ok) {
      refund();
      throw budgetRefusal(shared.decision, limitHeaders);
    }
  }

  return (record) => {
    const decision: BudgetDecision =
      shared?.decision ?? (budgetsSkipped ? { ok: true, tightest: undefined } : checkBudgets(deps.spend, checks, estimate.reservedMicroUsd, request.now));
    if (!decision.ok) {
      refund();
      throw budgetRefusal(decision, limitHeaders);
    }
    record();
    const headers = { ...limitHeaders, ...budgetHeaders(decision) };
    let done = false;
    return {
      headers,
      settle(usage) {
        if (done) return;
        done = true;
        if (ticket !== undefined) {
          deps.limiter.settle(ticket, computeSettlement(bindings, demands, { model: estimate.model, tokens: usage.tokens, microUsd: usage.microUsd }));
        }
        shared?.reservation?.settle(usage.microUsd);
      },
      release() {
        if (done) return;
        done = true;
        refund();
        shared?.reservation?.release();
      },
    };
  };
}

function refusalFor(result: Extract<AcquireResult, { ok: false }>, caller: Caller, bindings: readonly LimitBinding[], demands: readonly Demand[]): AdmissionRefused {
  const headers = buildRateLimitHeaders(result, caller.key.id);
  const index = bindings.findIndex((b) => b.bucket.id === result.refusedBy.id);
  const binding = bindings[index];
  const level = result.refusedBy.hashTag === 'global' ? 'the global limit' : result.refusedBy.hashTag.startsWith('tenant:') ? `tenant ${caller.tenant?.name ?? ''} limit` : 'limit';
  const name = result.refusedBy.limitName;
  if (result.reason === 'never_fits') {
    const cost = demands[index]?.cost ?? 0;
    const unit = binding?.limit.unit ?? 'requests';
    const amount = unit === 'usd' ? `${formatMicrosUsd(cost)}` : `${cost} ${unit}`;
    const burst = unit === 'usd' ? formatMicrosUsd(result.refusedBy.burst) : `${result.refusedBy.burst}`;
    return new AdmissionRefused(
      'other',
      new TollgateError('exceeds_limit_burst', `This request needs ${amount} but ${level} "${name}" holds at most ${burst}; it can never pass. Lower max_tokens or send a smaller request.`, { headers }),
    );
  }
  if (result.reason === 'unavailable') {
    return new AdmissionRefused('other', new TollgateError('limiter_unavailable', 'Rate limits cannot be checked right now (limiter unavailable); try again shortly.', { headers: { ...headers, 'retry-after': '1' } }));
  }
  const seconds = headers['retry-after'] ?? '1';
  return new AdmissionRefused(
    'rate_limit',
    new TollgateError('rate_limit_exceeded', `Rate limit reached for ${level} "${name}". Try again in ${seconds}s.`, { headers }),
  );
}

function budgetRefusal(decision: Extract<BudgetDecision, { ok: false }>, limitHeaders: Record<string, string>): AdmissionRefused {
  const { refusedBy, reservationMicroUsd } = decision;
  const { budget } = refusedBy.check;
  const per = budget.period === 'total' ? 'total' : budget.period === 'day' ? 'daily' : 'monthly';
  const resets = refusedBy.resetsAt === undefined ? 'It does not reset.' : `It resets at ${new Date(refusedBy.resetsAt).toISOString()}.`;
  const message =
    reservationMicroUsd > budget.microUsd
      ? `This request could cost up to ${formatMicrosUsd(reservationMicroUsd)}, more than the whole ${per} budget of ${refusedBy.check.label} (${formatMicrosUsd(budget.microUsd)}). Lower max_tokens or send a smaller request.`
      : `The ${per} budget of ${refusedBy.check.label} is used up: ${formatMicrosUsd(refusedBy.spentMicroUsd)} of ${formatMicrosUsd(budget.microUsd)} spent, and this request could cost up to ${formatMicrosUsd(reservationMicroUsd)}. ${resets}`;
  return new AdmissionRefused(
    'budget',
    new TollgateError('insufficient_quota', message, {
      headers: {
        ...limitHeaders,
        // OpenAI's SDKs stop retrying on this header: waiting seconds will not help.
        'x-should-retry': 'false',
        'x-tollgate-budget-remaining-usd': microUsdHeader(Math.max(0, budget.microUsd - refusedBy.spentMicroUsd)),
        'x-tollgate-budget-period': budget.period,
        ...(refusedBy.resetsAt === undefined ? {} : { 'x-tollgate-budget-reset': new Date(refusedBy.resetsAt).toISOString() }),
      },
    }),
  );
}

function budgetHeaders(decision: Extract<BudgetDecision, { ok: true }>): Record<string, string> {
  const tightest = decision.tightest;
  if (tightest === undefined) return {};
  return {
    // What is left once this request's reservation is taken (it settles at its real cost afterwards).
    'x-tollgate-budget-remaining-usd': microUsdHeader(Math.max(0, tightest.remainingMicroUsd)),
    'x-tollgate-budget-period': tightest.check.budget.period,
  };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * What each of a key's limits (its own, its tenant's, the global ones) has left
 * right now, as this process sees it — for the dashboard and the bucket gauge.
 */
export function snapshotLimits(limiter: Limiter, caller: Caller, globalLimits: readonly LimitSpec[]): Array<{ level: 'key' | 'tenant' | 'global'; limitName: string; remaining: number; burst: number; unit: string }> {
  return bindingsFor(caller, globalLimits).map(({ limit, bucket }) => {
    const state = limiter.peek(bucket);
    const level = bucket.hashTag === 'global' ? 'global' : bucket.hashTag.startsWith('tenant:') ? 'tenant' : 'key';
    return { level, limitName: limit.name, remaining: state.remaining, burst: state.burst, unit: limit.unit };
  });
}
