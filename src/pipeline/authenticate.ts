/**
 * Stage 1, authenticate: who is asking. The tenant key comes from
 * `Authorization: Bearer`, `api-key` or `x-api-key` and is checked against
 * the key cache. Failures are 401 (403 for a key an operator suspended, 500
 * for a corrupt stored policy) in OpenAI's shape; no message ever repeats the
 * key. Nothing is recorded for a request that fails here: the ledger is per
 * key, and the audit trail has the suspension.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import type { Endpoint } from '../endpoints.js';
import { TollgateError } from '../domain/errors.js';
import { clientRequestOf, firstHeader, type HeaderRecord } from '../http/client-request.js';
import type { KeyCache } from '../keys/cache.js';
import type { Caller } from '../domain/caller.js';
import { callerFor } from '../keys/caller.js';
import type { RequestContext } from './context.js';

/** The presented key, from any of the three headers OpenAI-style clients use. */
function presentedKey(headers: HeaderRecord): string | undefined {
  const authorization = firstHeader(headers.authorization);
  if (authorization !== undefined) {
    const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  const apiKey = firstHeader(headers['api-key']) ?? firstHeader(headers['x-api-key']);
  return apiKey === undefined || apiKey.trim() === '' ? undefined : apiKey.trim();
}

/** 403 key_suspended (docs/errors.md): until an operator lifts it, which no retry can hasten. */
function suspended(since: number): TollgateError {
  const at = new Date(since).toISOString();
  return new TollgateError('key_suspended', `This API key is suspended by an operator since ${at}; ask them to lift the suspension.`, {
    headers: { 'x-should-retry': 'false', 'x-tollgate-suspended-since': at },
  });
}

/** The caller behind a request's headers, or a 401 (403 for a suspended key, 500 for a key whose stored policy is corrupt). */
export function authenticateHeaders(headers: HeaderRecord, cache: KeyCache, now: number): Caller {
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
  if (key.suspendedAt !== undefined) throw suspended(key.suspendedAt);
  if (key.expiresAt !== null && key.expiresAt <= now) throw new TollgateError('key_expired', 'This API key has expired.');
  return callerFor(key, cache);
}

/** Stage 1: the request's context, or a 401. */
export function authenticate(c: Context<AppEnv>, endpoint: Endpoint, deps: { keys: KeyCache; now: () => number }): RequestContext {
  const startedAt = deps.now();
  const client = clientRequestOf(c.req.raw, c.env);
  const caller = authenticateHeaders(client.headers, deps.keys, startedAt);
  return { requestId: c.get('requestId'), endpoint, startedAt, url: c.req.url, client, caller };
}
