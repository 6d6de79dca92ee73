/**
 * The answers admission gives when it says no: honest 429s that say which
 * limit or budget refused and for how long, a 400 for a request no wait
 * could ever admit, and 503 when limits or budgets cannot be checked and the
 * fail mode is `closed`. Expected refusals, so they carry the ledger's reason.
 */
import type { BudgetDecision, BudgetStanding } from '../budgets/check.js';
import { reservationOf, usefulMinimum } from '../budgets/output-cap.js';
import type { Estimate } from '../estimate/index.js';
import { TollgateError } from '../domain/errors.js';
import type { Caller } from '../domain/caller.js';
import { pausedFor } from '../domain/owner-pauses.js';
import type { Attribution } from '../endusers/attribution.js';
import type { RejectionReason } from '../storage/ledger.js';
import { buildRateLimitHeaders, describeWait, fullWaitSeconds, type AcquireResult, type Demand, type LimitBinding } from '../limits/index.js';
import { formatMicrosExact, formatMicrosFixed } from '../domain/money.js';

/** A refusal by admission, with the reason the ledger files it under. */
export class AdmissionRefused extends TollgateError {
  readonly reason: RejectionReason;
  /** Which limit or budget said no, as its message names it (`limit "rpm"`, `daily budget of key k`): a trace's attribute. */
  readonly refusedBy: string | undefined;
  constructor(reason: RejectionReason, error: TollgateError, refusedBy?: string) {
    super(error.code, error.message, { param: error.param, headers: { ...error.headers } });
    this.reason = reason;
    this.refusedBy = refusedBy;
  }
}

/** The refusal for a limiter's no: 429 rate_limit_exceeded, 400 exceeds_limit_burst, or 503 limiter_unavailable. */
export function limitRefusal(
  result: Extract<AcquireResult, { ok: false }>,
  caller: Caller,
  bindings: readonly LimitBinding[],
  demands: readonly Demand[],
): AdmissionRefused {
  const headers = buildRateLimitHeaders(result, caller.key.id);
  const index = bindings.findIndex((b) => b.bucket.id === result.refusedBy.id);
  const binding = bindings[index];
  const level =
    result.refusedBy.hashTag === 'global'
      ? 'the global limit'
      : result.refusedBy.hashTag.startsWith('tenant:')
        ? `tenant ${caller.tenant?.name ?? ''} limit`
        : result.refusedBy.hashTag.includes(':user:')
          ? `end user "${result.refusedBy.hashTag.slice(result.refusedBy.hashTag.indexOf(':user:') + 6)}" limit`
          : 'limit';
  const name = result.refusedBy.limitName;
  if (result.reason === 'never_fits') {
    const cost = demands[index]?.cost ?? 0;
    const unit = binding?.limit.unit ?? 'requests';
    const amount = unit === 'usd' ? formatMicrosExact(cost) : `${cost} ${unit}`;
    const burst = unit === 'usd' ? formatMicrosExact(result.refusedBy.burst) : `${result.refusedBy.burst}`;
    return new AdmissionRefused(
      'other',
      new TollgateError(
        'exceeds_limit_burst',
        `This request needs ${amount} but ${level} "${name}" holds at most ${burst}; it can never pass. Lower max_tokens or send a smaller request.`,
        { headers },
      ),
    );
  }
  if (result.reason === 'unavailable') return limiterUnavailable('Rate limits', headers);
  // The full wait, which Retry-After may not say: it stops under a minute so that SDKs wait at all.
  const wait = describeWait(fullWaitSeconds(result.retryAfterMs));
  return new AdmissionRefused(
    'rate_limit',
    new TollgateError('rate_limit_exceeded', `Rate limit reached for ${level} "${name}". Try again in ${wait}.`, { headers }),
    `${level} "${name}"`,
  );
}

/** 503: limits or budgets cannot be checked (Redis unavailable, fail mode `closed`). */
export function limiterUnavailable(what: 'Rate limits' | 'Budgets', headers: Readonly<Record<string, string>>): AdmissionRefused {
  const why = what === 'Budgets' ? 'Redis unavailable' : 'limiter unavailable';
  // One second in both forms: SDKs read retry-after-ms first, and no bucket wait applies.
  const { 'x-tollgate-retry-after': _fullWait, ...rest } = headers;
  return new AdmissionRefused(
    'other',
    new TollgateError('limiter_unavailable', `${what} cannot be checked right now (${why}); try again shortly.`, {
      headers: { ...rest, 'retry-after': '1', 'retry-after-ms': '1000' },
    }),
  );
}

/** 429 insufficient_quota, which OpenAI's SDKs do not retry. */
export function budgetRefusal(decision: Extract<BudgetDecision, { ok: false }>, limitHeaders: Readonly<Record<string, string>>): AdmissionRefused {
  const { refusedBy, reservationMicroUsd } = decision;
  const { budget } = refusedBy.check;
  const per = budget.period === 'total' ? 'total' : budget.period === 'day' ? 'daily' : budget.period === 'week' ? 'weekly' : 'monthly';
  const resets = refusedBy.resetsAt === undefined ? 'It does not reset.' : `It resets at ${new Date(refusedBy.resetsAt).toISOString()}.`;
  const message =
    reservationMicroUsd > budget.microUsd
      ? `This request could cost up to ${formatMicrosExact(reservationMicroUsd)}, more than the whole ${per} budget of ${refusedBy.check.label} (${formatMicrosExact(budget.microUsd)}). Lower max_tokens or send a smaller request.`
      : `The ${per} budget of ${refusedBy.check.label} is used up: ${formatMicrosExact(refusedBy.spentMicroUsd)} of ${formatMicrosExact(budget.microUsd)} spent, and this request could cost up to ${formatMicrosExact(reservationMicroUsd)}. ${resets}`;
  return new AdmissionRefused(
    'budget',
    new TollgateError('insufficient_quota', message, {
      headers: {
        ...limitHeaders,
        // OpenAI's SDKs stop retrying on this header: waiting seconds will not help.
        'x-should-retry': 'false',
        'x-tollgate-budget-remaining-usd': formatMicrosFixed(Math.max(0, budget.microUsd - refusedBy.spentMicroUsd)),
        'x-tollgate-budget-period': budget.period,
        ...(refusedBy.resetsAt === undefined ? {} : { 'x-tollgate-budget-reset': new Date(refusedBy.resetsAt).toISOString() }),
      },
    }),
    `${per} budget of ${refusedBy.check.label}`,
  );
}

/** The budget headers of an admitted request: what its tightest budget has left once its reservation is taken. */
export function budgetHeaders(tightest: BudgetStanding | undefined): Record<string, string> {
  if (tightest === undefined) return {};
  return {
    'x-tollgate-budget-remaining-usd': formatMicrosFixed(Math.max(0, tightest.remainingMicroUsd)),
    'x-tollgate-budget-period': tightest.check.budget.period,
  };
}

/** 400: the client's own `x-tollgate-max-cost-usd` cannot pay for the prompt and a useful completion. */
export function costCapRefusal(
  estimate: Estimate,
  capMicroUsd: number,
  minOutputTokens: number,
  limitHeaders: Readonly<Record<string, string>>,
): AdmissionRefused {
  const tokens = usefulMinimum(estimate, minOutputTokens);
  const least = reservationOf(estimate, tokens);
  return new AdmissionRefused(
    'other',
    new TollgateError(
      'invalid_value',
      `x-tollgate-max-cost-usd is ${formatMicrosExact(capMicroUsd)}, but this request's prompt and ${tokens} completion tokens cost at least ${formatMicrosExact(least)}. Raise the cap or send a smaller request.`,
      { param: 'x-tollgate-max-cost-usd', headers: { ...limitHeaders } },
    ),
  );
}

/**
 * 429 runaway_throttled: the runaway stop paused the key, or the request's session or end user
 * (src/alerts/runaway-stop.ts). No Retry-After: the pause lasts until the spend rate falls or an
 * operator resumes it, which no wait can promise, and an agent looping on its own retries is what the
 * stop is for; `x-should-retry: false` stops the SDKs' retries, as for a used-up budget.
 */
export function runawayRefusal(caller: Caller, attribution: Attribution): AdmissionRefused | undefined {
  const throttle = caller.key.throttle ?? pausedFor(caller.key.pauses, attribution.session, attribution.endUser);
  if (throttle?.reason === undefined) return undefined;
  return new AdmissionRefused(
    'rate_limit',
    new TollgateError('runaway_throttled', throttle.reason, {
      headers: { 'x-should-retry': 'false', 'x-tollgate-throttled-since': new Date(throttle.at).toISOString() },
    }),
  );
}
