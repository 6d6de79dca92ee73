/**
 * Who a request's key stands for: the key, its policy, and its tenant's
 * (src/keys/caller.ts builds it from the key cache), and the rule of which
 * models a policy allows.
 */
import { TollgateError } from './errors.js';
import type { Policy } from './policy.js';
import type { AuthKey, AuthTenant } from './keys.js';

export interface Caller {
  readonly key: AuthKey;
  readonly policy: Policy;
  readonly tenant: AuthTenant | undefined;
  readonly tenantPolicy: Policy | undefined;
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
