/**
 * Who presents a bearer token to the admin API or the dashboard's JSON: the
 * bootstrap admin (TOLLGATE_ADMIN_TOKEN) or a named admin (its `tga-` token,
 * looked up on every request so a revocation holds at once on every node).
 * Compared only while the client's address has checks left
 * (src/http/secret-throttle.ts).
 */
import type { Context } from 'hono';
import { createHash, timingSafeEqual } from 'node:crypto';
import { BOOTSTRAP_ACTOR, type Actor } from '../domain/admins.js';
import { isAdminTokenText } from '../storage/admin-rules.js';
import type { AdminStore } from '../storage/admins.js';
import type { AppEnv } from '../app-env.js';
import { bearerOf, checkPresentedSecret, tooManyAttempts, type SecretGuard } from '../http/secret-check.js';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant-time comparison of a presented token with the configured one. */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The actor a presented token is: the bootstrap admin, an active named admin, or none. */
export async function tokenActor(presented: string, adminToken: string, admins: AdminStore | undefined): Promise<Actor | undefined> {
  if (tokenMatches(presented, adminToken)) return BOOTSTRAP_ACTOR;
  const text = presented.trim();
  if (admins === undefined || !isAdminTokenText(text)) return undefined;
  return admins.activeAdmin({ secret: text });
}

/** The actor of the request's bearer token; undefined without one or for a wrong one; a throttled address is a 429. */
export async function bearerActor(c: Context<AppEnv>, adminToken: string, admins: AdminStore | undefined, guard: SecretGuard): Promise<Actor | undefined> {
  const bearer = bearerOf(c);
  if (bearer === undefined) return undefined;
  const outcome = await checkPresentedSecret(c, guard, () => tokenActor(bearer, adminToken, admins));
  if (outcome.kind === 'throttled') throw tooManyAttempts(outcome.retryAfterMs);
  return outcome.kind === 'right' ? outcome.value : undefined;
}
