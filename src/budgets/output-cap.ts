/**
 * How much completion a request may have when a budget or a cost cap bounds
 * it (README, "Budgets are hard caps"). Pure, no I/O.
 *
 * A bounded request is reserved at its worst case — the prompt plus every
 * choice's largest possible completion ({@link Estimate.completionBoundPerChoice}),
 * reasoning tokens included — never at the default reservation. When that
 * does not fit what may be spent, the completion is cut to the most that
 * fits, and Tollgate sends that as the request's own output limit; when not
 * even a useful minimum fits, the request is refused.
 */
import type { Estimate } from '../estimate/index.js';
import { reservationCost } from '../estimate/estimate-body.js';

/** The completion a bounded request is admitted with. */
export interface OutputPlan {
  /** Completion tokens per choice the request may produce. */
  readonly perChoice: number;
  /** perChoice × choices: what the stream may relay before it is cut. */
  readonly completionTokens: number;
  /** The reservation: prompt + completionTokens at the model's price, integer µUSD. */
  readonly microUsd: number;
  /** True when Tollgate lowered the limit below what the request would otherwise allow. */
  readonly capped: boolean;
}

/** The reservation of `perChoice` completion tokens per choice, priced as the estimate prices it. */
export function reservationOf(estimate: Estimate, perChoice: number): number {
  return reservationCost(estimate.reservationBase, perChoice * estimate.choices, estimate.price, estimate.toolRates);
}

/** Completion tokens per choice worth admitting: the configured minimum, or less if the request itself asks for less. */
export function usefulMinimum(estimate: Estimate, minOutputTokens: number): number {
  return Math.min(estimate.completionBoundPerChoice, Math.max(1, minOutputTokens));
}

/**
 * The largest completion per choice whose reservation costs at most
 * `affordableMicroUsd`, up to the request's bound; undefined when fewer than
 * `minOutputTokens` (or the prompt alone) would fit.
 */
export function planOutput(estimate: Estimate, affordableMicroUsd: number, minOutputTokens: number): OutputPlan | undefined {
  const bound = estimate.completionBoundPerChoice;
  const full = reservationOf(estimate, bound);
  if (full <= affordableMicroUsd) return { perChoice: bound, completionTokens: bound * estimate.choices, microUsd: full, capped: false };
  const perChoice = affordablePerChoice(estimate, affordableMicroUsd);
  if (perChoice < usefulMinimum(estimate, minOutputTokens) || perChoice < 1) return undefined;
  return { perChoice, completionTokens: perChoice * estimate.choices, microUsd: reservationOf(estimate, perChoice), capped: true };
}

/**
 * The largest t < bound with reservationOf(estimate, t) ≤ affordable (0 when
 * none): the cost grows with t, so a binary search over [0, bound] finds it
 * with the very function that prices the reservation — ~17 evaluations.
 */
function affordablePerChoice(estimate: Estimate, affordableMicroUsd: number): number {
  if (estimate.choices === 0 || reservationOf(estimate, 0) > affordableMicroUsd) return 0;
  let low = 0; // fits
  let high = estimate.completionBoundPerChoice; // does not fit (planOutput checked)
  while (high - low > 1) {
    const middle = low + Math.floor((high - low) / 2);
    if (reservationOf(estimate, middle) <= affordableMicroUsd) low = middle;
    else high = middle;
  }
  return low;
}
