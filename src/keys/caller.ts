/**
 * Who a request's key stands for: the key, its policy, and its tenant's.
 * Built from the key cache's records; a corrupt stored policy fails closed.
 */
import { TollgateError } from '../domain/errors.js';
import type { Caller } from '../domain/caller.js';
import { PolicyError } from '../domain/policy.js';
import type { KeyCache } from './cache.js';
import type { AuthKey } from '../domain/keys.js';

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
