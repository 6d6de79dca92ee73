/**
 * Checking a secret a client presents, through the per-address throttle
 * (secret-throttle.ts): the one way every surface compares a token — the
 * dashboard's login form, the admin API's bearer token, the /metrics token.
 * The surface says how to find what the secret opens; this says whether it
 * may look at all, and gives the check back when the secret was right.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import { clientAddressOf } from './client-address.js';
import { SecretThrottle } from './secret-throttle.js';

/** What a surface needs to check secrets: the shared throttle, the proxies believed about X-Forwarded-For, the clock. */
export interface SecretGuard {
  readonly throttle: SecretThrottle;
  /** TOLLGATE_TRUSTED_PROXIES: the throttle counts per real client behind them. */
  readonly trustedProxies: ReadonlySet<string>;
  readonly now: () => number;
}

/** A guard of its own for a surface built without the app's (tests, benches, a route mounted alone). */
export function ownSecretGuard(options: { readonly trustedProxies?: ReadonlySet<string> | undefined; readonly now?: () => number } = {}): SecretGuard {
  return { throttle: new SecretThrottle(), trustedProxies: options.trustedProxies ?? new Set(), now: options.now ?? Date.now };
}

/**
 * The outcome of presenting a secret: what it opens, `wrong` (it was
 * compared and opens nothing), or `throttled` with how long to wait (it was
 * not compared at all).
 */
export type SecretOutcome<T> =
  { readonly kind: 'right'; readonly value: T } | { readonly kind: 'wrong' } | { readonly kind: 'throttled'; readonly retryAfterMs: number };

/** The client address the throttle counts a request under. */
function requestAddress(c: Context<AppEnv>, trustedProxies: ReadonlySet<string>): string {
  return clientAddressOf(c.env?.incoming?.socket.remoteAddress, c.req.header('x-forwarded-for'), trustedProxies);
}

/**
 * Compares a presented secret only if the request's address has a check
 * left: `find` says what the secret opens (undefined: nothing). A right
 * secret gives its check back.
 */
export async function checkPresentedSecret<T>(
  c: Context<AppEnv>,
  guard: SecretGuard,
  find: () => T | undefined | Promise<T | undefined>,
): Promise<SecretOutcome<T>> {
  const address = requestAddress(c, guard.trustedProxies);
  const retryAfterMs = guard.throttle.take(address, guard.now());
  if (retryAfterMs > 0) return { kind: 'throttled', retryAfterMs };
  const value = await find();
  if (value === undefined) return { kind: 'wrong' };
  guard.throttle.refund(address, guard.now());
  return { kind: 'right', value };
}

/** Whole seconds for `Retry-After`: the wait rounded up, at least one. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/** The API surfaces' answer to a throttled address: 429 in OpenAI's shape, with an honest Retry-After. */
export function tooManyAttempts(retryAfterMs: number): TollgateError {
  const seconds = retryAfterSeconds(retryAfterMs);
  return new TollgateError(
    'too_many_attempts',
    `Too many wrong tokens from your address: try again in ${seconds} second${seconds === 1 ? '' : 's'}. The token was not checked.`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

/** The token of an `Authorization: Bearer …` header, if the request carries one. */
export function bearerOf(c: Context<AppEnv>): string | undefined {
  const header = c.req.header('authorization');
  return header === undefined ? undefined : /^\s*Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}
