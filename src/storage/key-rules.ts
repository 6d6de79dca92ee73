/**
 * The rules both key stores apply before they write (src/storage/keys.ts):
 * names, policy checks, how a patch merges into a policy, and what a tenant
 * is created with. Pure; one copy, so the two backends cannot drift.
 */
import { TollgateError } from '../domain/errors.js';
import {
  PolicyError,
  validatePolicy,
  type Budget,
  type EndUserPolicy,
  type LimitSpec,
  type Policy,
  type SessionPolicy,
  type TagBudget,
} from '../domain/policy.js';
import { readStoredPolicy } from '../domain/policy-json.js';
import type { NewTenantPolicy } from './keys.js';

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,99}$/;

export function checkName(name: string, what: 'key' | 'tenant'): string {
  const trimmed = name.trim();
  if (!NAME_PATTERN.test(trimmed)) {
    throw new TollgateError(
      'invalid_request',
      `${what} name "${name}" must be 1–100 characters: letters, digits, "_", ".", "@", ":", "-" (starting with a letter or digit)`,
      { param: 'name' },
    );
  }
  return trimmed;
}

export function checkPolicy(policy: Policy): Policy {
  try {
    validatePolicy(policy);
  } catch (error) {
    if (error instanceof PolicyError) throw new TollgateError('invalid_policy', error.message);
    throw error;
  }
  return policy;
}

/** A stored policy, or a `key_misconfigured` error naming its owner (the admin operations fail loudly; the proxy's lookups fail closed). */
export function storedPolicy(text: string, owner: string): Policy {
  const policy = readStoredPolicy(text);
  if (policy instanceof PolicyError) throw new TollgateError('key_misconfigured', `${owner} has an invalid stored policy: ${policy.message}`);
  return policy;
}

/** The tenant's policy as stored: every tenant field given is kept (each store once dropped some of its own). */
export function tenantPolicy(input: NewTenantPolicy): Policy {
  return mergePolicy({ limits: [] }, input);
}

export function mergePolicy(
  current: Policy,
  patch: {
    limits?: readonly LimitSpec[] | undefined;
    budget?: Budget | null | undefined;
    budgets?: readonly Budget[] | null | undefined;
    models?: readonly string[] | null | undefined;
    maxInFlight?: number | null | undefined;
    endUser?: EndUserPolicy | null | undefined;
    session?: SessionPolicy | null | undefined;
    tagBudgets?: readonly TagBudget[] | null | undefined;
    downgrade?: Policy['downgrade'] | null | undefined;
    runaway?: Policy['runaway'] | null | undefined;
  },
): Policy {
  const runaway = patch.runaway === undefined ? current.runaway : (patch.runaway ?? undefined);
  const endUser = patch.endUser === undefined ? current.endUser : (patch.endUser ?? undefined);
  const session = patch.session === undefined ? current.session : (patch.session ?? undefined);
  const tagBudgets = patch.tagBudgets === undefined ? current.tagBudgets : (patch.tagBudgets ?? undefined);
  const limits = patch.limits ?? current.limits;
  const budget = patch.budget === undefined ? current.budget : (patch.budget ?? undefined);
  const budgets = patch.budgets === undefined ? current.budgets : (patch.budgets ?? undefined);
  const models = patch.models === undefined ? current.models : (patch.models ?? undefined);
  const maxInFlight = patch.maxInFlight === undefined ? current.maxInFlight : (patch.maxInFlight ?? undefined);
  const downgrade = patch.downgrade === undefined ? current.downgrade : (patch.downgrade ?? undefined);
  return {
    limits,
    ...(budget ? { budget } : {}),
    ...(budgets && budgets.length > 0 ? { budgets } : {}),
    ...(models ? { models } : {}),
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
    ...(endUser === undefined || (endUser.limits.length === 0 && (endUser.budgets ?? []).length === 0) ? {} : { endUser }),
    ...(session === undefined || (session.limits.length === 0 && (session.budgets ?? []).length === 0) ? {} : { session }),
    ...(tagBudgets && tagBudgets.length > 0 ? { tagBudgets } : {}),
    ...(downgrade === undefined ? {} : { downgrade }),
    ...(runaway === undefined || Object.keys(runaway).length === 0 ? {} : { runaway }),
  };
}
