/**
 * Who is asking: the tenant key from `Authorization: Bearer`, `api-key` or
 * `x-api-key`, checked against the cache. Failures are 401/403 in OpenAI's
 * shape; no message ever repeats the key.
 */
import { TollgateError } from '../errors.js';
import { PolicyError, type Policy } from '../limits/policy.js';
import type { KeyCache } from './cache.js';
import type { AuthKey, AuthTenant } from './store.js';

export interface Caller {
  readonly key: AuthKey;
  readonly policy: Policy;
  readonly tenant: AuthTenant | undefined;
  readonly tenantPolicy: Policy | undefined;
}

type HeaderRecord = Readonly<Record<string, string | string[] | undefined>>;

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The presented key, from any of the three headers OpenAI-style clients use. */
export function presentedKey(headers: HeaderRecord): string | undefined {
  const authorization = single(headers.authorization);
  if (authorization !== undefined) {
    const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  const apiKey = single(headers['api-key']) ?? single(headers['x-api-key']);
  return apiKey === undefined || apiKey.trim() === '' ? undefined : apiKey.trim();
}

/** Authenticates a request or throws a 401 (or 500 for a key whose stored policy is corrupt). */
export function authenticate(headers: HeaderRecord, cache: KeyCache, now: number): Caller {
  const presented = presentedKey(headers);
  if (presented === undefined) {
    throw new TollgateError(
      'missing_api_key',
      "You didn't provide an API key. Send your Tollgate key as 'Authorization: Bearer tg-…' (or in an 'api-key' / 'x-api-key' header).",
    );
  }
  const key = cache.lookup(presented);
  if (key === undefined) throw new TollgateError('invalid_api_key', 'Incorrect API key provided.');
  if (key.revokedAt !== null) throw new TollgateError('key_revoked', 'This API key has been revoked.');
  if (key.expiresAt !== null && key.expiresAt <= now) throw new TollgateError('key_expired', 'This API key has expired.');
  return callerFor(key, cache);
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

/** 403 unless the key may use `model` (exact names, or prefixes written `gpt-4o*`). */
export function checkModelAllowed(policy: Policy, model: string): void {
  const allowed = policy.models;
  if (allowed === undefined || allowed.length === 0) return;
  const ok = allowed.some((pattern) => (pattern.endsWith('*') ? model.startsWith(pattern.slice(0, -1)) : model === pattern));
  if (!ok) {
    throw new TollgateError('model_not_allowed', `This key may not use the model "${model}". Allowed: ${allowed.join(', ')}.`, { param: 'model' });
  }
}
