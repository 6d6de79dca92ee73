/**
 * Who a request's key stands for: the key, its policy, and its tenant's.
 * Built from the key cache's records; a corrupt stored policy fails closed.
 */
import { TollgateError } from '../errors.js';
import { bindingsForPolicy, type LimitBinding } from '../limits/index.js';
import { PolicyError, type LimitSpec, type Policy } from '../limits/algorithm/policy.js';
import type { KeyCache } from './cache.js';
import type { AuthKey, AuthTenant } from './store.js';

export interface Caller {
  readonly key: AuthKey;
  readonly policy: Policy;
  readonly tenant: AuthTenant | undefined;
  readonly tenantPolicy: Policy | undefined;
}

/**
 * The caller a key stands for: its policy and its tenant's. Throws 500
 * `key_misconfigured` when either stored policy is corrupt (fail closed).
 */
export function callerFor(key: AuthKey, cache: KeyCache): Caller {
  if (key.policy instanceof PolicyError) {
    throw new TollgateError('key_misconfigured', "This key's configuration is invalid; the operator has to fix it.", { cause: key.policy });
  }
  const tenant = key.tenantId === null ? undefined : cache.tenant(key.tenantId);
  if (tenant?.policy instanceof PolicyError) {
    throw new TollgateError('key_misconfigured', "This key's tenant configuration is invalid; the operator has to fix it.", { cause: tenant.policy });
  }
  return { key, policy: key.policy, tenant, tenantPolicy: tenant?.policy };
}

/** True when the key may use `model` (exact names, or prefixes written `gpt-4o*`; no list = every model). */
export function isModelAllowed(policy: Policy, model: string): boolean {
  const allowed = policy.models;
  if (allowed === undefined || allowed.length === 0) return true;
  return allowed.some((pattern) => (pattern.endsWith('*') ? model.startsWith(pattern.slice(0, -1)) : model === pattern));
}

/** 403 unless the key may use `model`. */
export function checkModelAllowed(policy: Policy, model: string): void {
  if (isModelAllowed(policy, model)) return;
  throw new TollgateError('model_not_allowed', `This key may not use the model "${model}". Allowed: ${(policy.models ?? []).join(', ')}.`, { param: 'model' });
}

/** The buckets a caller's request pays into: its key's, its tenant's, and the global ones. */
export function bindingsFor(caller: Caller, globalLimits: readonly LimitSpec[]): LimitBinding[] {
  const bindings = [...bindingsForPolicy('key', caller.key.id, caller.policy.limits)];
  if (caller.tenant !== undefined && caller.tenantPolicy !== undefined)
    bindings.push(...bindingsForPolicy('tenant', caller.tenant.id, caller.tenantPolicy.limits));
  if (globalLimits.length > 0) bindings.push(...bindingsForPolicy('global', '', globalLimits));
  return bindings;
}
