/**
 * Budgets: a USD cap per UTC day, UTC month or lifetime, for a key and for its
 * tenant. A request is admitted only if its reservation fits every budget it
 * belongs to; after it ends, its actual cost replaces the reservation (the
 * ledger does that: budgets read the same spend the ledger records).
 *
 * The check is synchronous and must run in the same turn as the ledger
 * `begin` that records the reservation, so no admitted request can slip in
 * between (see SpendTracker).
 */
import type { Budget } from '../limits/policy.js';
import { periodEnd } from '../calendar.js';
import type { SpendScope, SpendTracker } from './spend-tracker.js';

export interface BudgetCheck {
  readonly scope: SpendScope;
  /** Who owns it, for messages ("key alpha", "tenant acme"). */
  readonly label: string;
  readonly budget: Budget;
}

export interface BudgetStanding {
  readonly check: BudgetCheck;
  readonly spentMicroUsd: number;
  /** What is left after this request's reservation. */
  readonly remainingMicroUsd: number;
  /** When the period ends (ms), absent for lifetime budgets. */
  readonly resetsAt: number | undefined;
}

export type BudgetDecision =
  | { readonly ok: true; /** The tightest budget, for the response header; absent without budgets. */ readonly tightest: BudgetStanding | undefined }
  | { readonly ok: false; readonly refusedBy: BudgetStanding; readonly reservationMicroUsd: number };

/** Checks `reservationMicroUsd` against every budget; refuses on the first that cannot hold it. */
export function checkBudgets(tracker: SpendTracker, checks: readonly BudgetCheck[], reservationMicroUsd: number, now: number): BudgetDecision {
  let tightest: BudgetStanding | undefined;
  for (const check of checks) {
    const spent = tracker.spent(check.scope, check.budget.period, now);
    const standing: BudgetStanding = {
      check,
      spentMicroUsd: spent,
      remainingMicroUsd: check.budget.microUsd - spent - reservationMicroUsd,
      resetsAt: periodEnd(check.budget.period, now),
    };
    if (standing.remainingMicroUsd < 0) return { ok: false, refusedBy: standing, reservationMicroUsd };
    if (tightest === undefined || standing.remainingMicroUsd < tightest.remainingMicroUsd) tightest = standing;
  }
  return { ok: true, tightest };
}

/** Integer micro-USD as a decimal dollar string for headers ("12.500000"). */
export function microUsdHeader(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  return `${sign}${Math.floor(abs / 1_000_000)}.${String(abs % 1_000_000).padStart(6, '0')}`;
}
