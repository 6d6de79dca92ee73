/**
 * Budgets: USD caps per calendar day, week or month (in the deployment's time
 * zone) or lifetime — several at once — for a key and for its tenant. A request is admitted only if its reservation fits every budget it
 * belongs to; after it ends, its actual cost replaces the reservation (the
 * ledger does that: budgets read the same spend the ledger records).
 *
 * The check is synchronous and must run in the same turn as the ledger
 * `begin` that records the reservation, so no admitted request can slip in
 * between (see SpendTracker).
 */
import { periodEnd } from '../domain/calendar.js';
import type { Caller } from '../domain/caller.js';
import { budgetsOf, type Budget } from '../domain/policy.js';
import type { BudgetScope, SpendTracker } from './spend-tracker.js';

export interface BudgetCheck {
  readonly scope: BudgetScope;
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

/** The budgets a caller's request counts against: every one of its key's and of its tenant's. */
export function budgetChecksFor(caller: Caller): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  for (const budget of budgetsOf(caller.policy)) checks.push({ scope: { level: 'key', id: caller.key.id }, label: `key ${caller.key.name}`, budget });
  if (caller.tenant !== undefined) {
    for (const budget of budgetsOf(caller.tenantPolicy)) {
      checks.push({ scope: { level: 'tenant', id: caller.tenant.id }, label: `tenant ${caller.tenant.name}`, budget });
    }
  }
  return checks;
}

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

/** The most any request may reserve now: the smallest room left in every budget (may be negative). */
export function affordable(tracker: SpendTracker, checks: readonly BudgetCheck[], now: number): number {
  let room = Number.MAX_SAFE_INTEGER;
  for (const check of checks) room = Math.min(room, check.budget.microUsd - tracker.spent(check.scope, check.budget.period, now));
  return room;
}
