/**
 * What a key's and its tenant's policies ask of each agent session
 * (session.ts), as the buckets and budgets admission (src/pipeline/admit.ts)
 * takes from, all or none with the key's own. Pure.
 *
 * - A session is one key's: the same id on two keys is two sessions.
 * - The key's `session.limits` are buckets `key:<keyId>:session:<s>:<limit>`;
 *   the tenant's, `tenant:<tenantId>:session:<keyId>:<s>:<limit>` (both apply).
 * - Budgets read the session's own ledger rows (src/storage/session-spend.ts).
 *   When the key and its tenant both budget one period, the smaller cap is the
 *   one check (one counter per session and period across nodes: two caps on
 *   one counter would each count the other's reservations).
 * - A request without a session has no session limits or budgets.
 */
import type { BudgetCheck } from '../budgets/check.js';
import type { Caller } from '../domain/caller.js';
import { bindLimits, type LimitBinding } from '../limits/index.js';
import type { Budget, Policy, SessionPolicy } from '../domain/policy.js';
import type { Attribution } from './attribution.js';

/** The session's own buckets of the key's and the tenant's per-session limits. */
export function sessionBindings(caller: Caller, attribution: Attribution): LimitBinding[] {
  const session = attribution.session;
  if (session === undefined) return [];
  const keyId = caller.key.id;
  const own = caller.policy.session?.limits ?? [];
  const tenants = caller.tenant === undefined ? [] : (caller.tenantPolicy?.session?.limits ?? []);
  if (own.length === 0 && tenants.length === 0) return [];
  return [
    ...(own.length === 0 ? [] : bindLimits('key', `${keyId}:session:${session}`, own)),
    ...(tenants.length === 0 ? [] : bindLimits('tenant', `${caller.tenant!.id}:session:${keyId}:${session}`, tenants)),
  ];
}

/** The session's budgets: the key's and its tenant's, one per period (the smaller cap where both give one). */
export function sessionBudgetChecks(caller: Caller, attribution: Attribution): BudgetCheck[] {
  const session = attribution.session;
  if (session === undefined) return [];
  const keyId = caller.key.id;
  const byPeriod = new Map<Budget['period'], { budget: Budget; owner: string }>();
  const add = (policy: SessionPolicy | undefined, owner: string) => {
    for (const budget of policy?.budgets ?? []) {
      const held = byPeriod.get(budget.period);
      if (held === undefined || budget.microUsd < held.budget.microUsd) byPeriod.set(budget.period, { budget, owner });
    }
  };
  add(caller.policy.session, '');
  if (caller.tenant !== undefined) add(caller.tenantPolicy?.session, ` (set by tenant ${caller.tenant.name})`);
  return [...byPeriod.values()].map(({ budget, owner }) => ({
    scope: { level: 'session', id: `${keyId}:${session}`, keyId, name: session },
    label: `session "${session}" of key ${caller.key.name}${owner}`,
    budget,
  }));
}

/** True when a key's or its tenant's per-session policy caps dollars (unknown models are then priced at the highest prices). */
export function hasSessionUsdCap(caller: Caller): boolean {
  const caps = (policy: Policy | undefined) =>
    (policy?.session?.budgets ?? []).length > 0 || (policy?.session?.limits ?? []).some((limit) => limit.unit === 'usd');
  return caps(caller.policy) || (caller.tenant !== undefined && caps(caller.tenantPolicy));
}
