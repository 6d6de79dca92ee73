/**
 * What a key's policy asks of each of its end users and tags, as the
 * buckets and budgets admission (src/pipeline/admit.ts) takes from, all or
 * none with the key's own. Pure.
 *
 * - Every end user of a key gets its own buckets of the key's `endUser.limits`
 *   (bucket ids `key:<keyId>:user:<user>:<limit>`, one Redis Cluster slot per
 *   user) and its own budgets (`endUser.budgets`), each with its own period.
 *   Buckets are built per request, not cached (there may be millions of
 *   users); the stores drop idle full buckets, so memory follows the users
 *   active in the last minute, not every user ever seen.
 * - A tag budget holds the key's requests that carry the tag.
 * - A request without an end user has no end-user limits or budgets (the
 *   key's own still apply); one without tags has no tag budgets.
 */
import type { BudgetCheck } from '../budgets/check.js';
import type { Caller } from '../domain/caller.js';
import { bindLimits, type LimitBinding } from '../limits/index.js';
import type { Policy } from '../domain/policy.js';
import type { Attribution } from './attribution.js';

/** The end user's own buckets of the key's per-user limits (none without a user or such limits). */
export function endUserBindings(caller: Caller, attribution: Attribution): LimitBinding[] {
  const limits = caller.policy.endUser?.limits;
  if (attribution.endUser === undefined || limits === undefined || limits.length === 0) return [];
  return bindLimits('key', endUserOwner(caller.key.id, attribution.endUser), limits);
}

/** The owner string of an end user's buckets: their hash tag is `key:<keyId>:user:<user>`. */
function endUserOwner(keyId: string, endUser: string): string {
  return `${keyId}:user:${endUser}`;
}

/** The end user's own budgets and the budgets of the request's tags. */
export function attributedBudgetChecks(caller: Caller, attribution: Attribution): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  const keyId = caller.key.id;
  const { endUser, tags } = attribution;
  if (endUser !== undefined) {
    for (const budget of caller.policy.endUser?.budgets ?? []) {
      checks.push({
        scope: { level: 'user', id: `${keyId}:${endUser}`, keyId, name: endUser },
        label: `end user "${endUser}" of key ${caller.key.name}`,
        budget,
      });
    }
  }
  if (tags.length > 0) {
    for (const { tag, microUsd, period } of caller.policy.tagBudgets ?? []) {
      if (!tags.includes(tag)) continue;
      checks.push({
        scope: { level: 'tag', id: `${keyId}:${tag}`, keyId, name: tag },
        label: `tag "${tag}" of key ${caller.key.name}`,
        budget: { microUsd, period },
      });
    }
  }
  return checks;
}

/** True when a key's per-user or per-tag policy caps dollars (unknown models are then priced at the highest prices). */
export function hasAttributedUsdCap(policy: Policy): boolean {
  return (
    (policy.endUser?.budgets ?? []).length > 0 || (policy.endUser?.limits ?? []).some((limit) => limit.unit === 'usd') || (policy.tagBudgets ?? []).length > 0
  );
}

/**
 * The names whose rollup rows must stay exact whatever the key's bound of
 * distinct names a day (src/storage/sqlite/name-bound.ts): every end user when the
 * key's or its tenant's policy gives end users limits or budgets (their
 * budgets read their own rows), and the tags with budgets.
 */
export function exactNames(caller: Caller): { endUser: boolean; tags: readonly string[] } | undefined {
  const endUser = hasEndUserRules(caller.policy) || (caller.tenantPolicy !== undefined && hasEndUserRules(caller.tenantPolicy));
  const tags = (caller.policy.tagBudgets ?? []).map((budget) => budget.tag);
  return endUser || tags.length > 0 ? { endUser, tags } : undefined;
}

function hasEndUserRules(policy: Policy): boolean {
  return (policy.endUser?.limits ?? []).length > 0 || (policy.endUser?.budgets ?? []).length > 0;
}
