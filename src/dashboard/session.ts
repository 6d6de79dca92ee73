/**
 * Dashboard sessions: stateless, signed cookies.
 *
 * The cookie holds `v1.<expiry>.<nonce>.<mac>`, where the MAC is
 * HMAC-SHA256 over `v1.<expiry>.<nonce>` keyed by a key *derived from* the
 * admin token. So:
 * - the token itself is never in the cookie (nor in any URL);
 * - every proxy process with the same token accepts the others' sessions,
 *   with no shared store;
 * - changing the token logs everyone out (old MACs no longer verify);
 * - a session ends by itself after {@link SESSION_TTL_MS}.
 * Logging out clears the browser's cookie; a stolen cookie stays valid until
 * it expires or the token changes.
 *
 * A named admin's session (docs/admins.md) is `a1.<admin id>.<expiry>.<nonce>.<mac>`,
 * signed under another label: it names the admin, never its token, and every
 * request looks the admin up, so revoking it ends its sessions at their next
 * request on every node. Each request's session resolves to an Actor with a
 * role ({@link resolveSessionActor}); the routes read it with {@link sessionActor}.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { BOOTSTRAP_ACTOR, type Actor } from '../domain/admins.js';
import type { AdminStore } from '../storage/admins.js';
import type { AppEnv } from '../app-env.js';

export const SESSION_COOKIE = 'tollgate_session';
/** How long a login lasts. */
export const SESSION_TTL_MS = 12 * 3_600_000;

const VERSION = 'v1';
/** Domain separation: this key signs dashboard sessions and nothing else. */
const KEY_LABEL = 'tollgate dashboard session key v1';

function sessionKey(adminToken: string): Buffer {
  return createHmac('sha256', adminToken).update(KEY_LABEL).digest();
}

function mac(adminToken: string, payload: string): Buffer {
  return createHmac('sha256', sessionKey(adminToken)).update(payload).digest();
}

/** A fresh signed session value, valid until `now + SESSION_TTL_MS`. */
export function createSessionValue(adminToken: string, now: number): string {
  const payload = `${VERSION}.${(now + SESSION_TTL_MS).toString(36)}.${randomBytes(12).toString('base64url')}`;
  return `${payload}.${mac(adminToken, payload).toString('base64url')}`;
}

/** Why a presented session value is not accepted (for tests and logs; never shown with the value). */
export type SessionCheck = 'valid' | 'missing' | 'malformed' | 'bad_signature' | 'expired';

/** Checks a session value: well-formed, signed with the current token (constant-time), not expired. */
export function checkSessionValue(value: string | undefined, adminToken: string, now: number): SessionCheck {
  if (value === undefined || value === '') return 'missing';
  const parts = value.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) return 'malformed';
  const [, expiryText = '', nonce = '', signature = ''] = parts;
  if (!/^[0-9a-z]{1,12}$/.test(expiryText) || !/^[A-Za-z0-9_-]{8,64}$/.test(nonce) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return 'malformed';
  const expected = mac(adminToken, `${VERSION}.${expiryText}.${nonce}`);
  const presented = Buffer.from(signature, 'base64url');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return 'bad_signature';
  const expiry = parseInt(expiryText, 36);
  // A signed expiry further out than one TTL was not made by this code: refuse it too.
  if (!(expiry > now) || expiry > now + SESSION_TTL_MS) return 'expired';
  return 'valid';
}

/** The `Set-Cookie` value that starts a session (HttpOnly, SameSite=Strict, Secure over https). */
export function sessionCookieHeader(value: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The `Set-Cookie` value that ends a session in this browser. */
export function clearedCookieHeader(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** Whether the request reached us over https (directly, or through a proxy that says so). */
export function isHttps(c: Context): boolean {
  const forwarded = c.req.header('x-forwarded-proto');
  if (forwarded !== undefined) return forwarded.split(',')[0]?.trim().toLowerCase() === 'https';
  return new URL(c.req.url).protocol === 'https:';
}

/** Whether the request carries a valid dashboard session for this admin token. */
function hasValidSession(c: Context, adminToken: string | undefined, now: number): boolean {
  if (adminToken === undefined) return false;
  return checkSessionValue(getCookie(c, SESSION_COOKIE), adminToken, now) === 'valid';
}

/** A session naming one id (a tenant token's or a named admin's), each kind under its own version and key label. */
interface NamedSession {
  readonly version: string;
  readonly label: string;
  readonly id: RegExp;
}

/*
 * Tenant sessions (a read-only dashboard token of one tenant, see
 * tenant-tokens.ts): `t1.<token id>.<expiry>.<nonce>.<mac>`, signed with a key
 * derived from the admin token under another label, so a tenant cookie can
 * never pass as an admin one (nor the reverse: the shapes differ too). The
 * cookie names the token, not its secret; each request looks the token up,
 * so revoking it or its expiry ends the session at once.
 */
const TENANT_SESSION: NamedSession = { version: 't1', label: 'tollgate tenant dashboard session key v1', id: /^dtk_[A-Za-z0-9_-]{8,32}$/ };

function namedMac(kind: NamedSession, adminToken: string, payload: string): Buffer {
  const key = createHmac('sha256', adminToken).update(kind.label).digest();
  return createHmac('sha256', key).update(payload).digest();
}

function createNamedSessionValue(kind: NamedSession, adminToken: string, id: string, expiry: number): string {
  const payload = `${kind.version}.${id}.${expiry.toString(36)}.${randomBytes(12).toString('base64url')}`;
  return `${payload}.${namedMac(kind, adminToken, payload).toString('base64url')}`;
}

/** The id a session value of `kind` names, when it is well-formed, signed and unexpired. */
function checkNamedSessionValue(kind: NamedSession, value: string | undefined, adminToken: string, now: number): string | undefined {
  if (value === undefined) return undefined;
  const parts = value.split('.');
  if (parts.length !== 5 || parts[0] !== kind.version) return undefined;
  const [, id = '', expiryText = '', nonce = '', signature = ''] = parts;
  if (!kind.id.test(id) || !/^[0-9a-z]{1,12}$/.test(expiryText) || !/^[A-Za-z0-9_-]{8,64}$/.test(nonce) || !/^[A-Za-z0-9_-]{43}$/.test(signature))
    return undefined;
  const expected = namedMac(kind, adminToken, `${kind.version}.${id}.${expiryText}.${nonce}`);
  const presented = Buffer.from(signature, 'base64url');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined;
  const expiry = parseInt(expiryText, 36);
  if (!(expiry > now) || expiry > now + SESSION_TTL_MS) return undefined;
  return id;
}

/** A signed tenant session for token `tokenId`, valid for one TTL (never past the token's own expiry). */
export function createTenantSessionValue(adminToken: string, tokenId: string, now: number, tokenExpiresAt: number | null): string {
  return createNamedSessionValue(TENANT_SESSION, adminToken, tokenId, Math.min(now + SESSION_TTL_MS, tokenExpiresAt ?? Number.POSITIVE_INFINITY));
}

/** The tenant token id of the request's session cookie, if it carries a valid tenant session. */
export function tenantSessionTokenId(c: Context, adminToken: string | undefined, now: number): string | undefined {
  if (adminToken === undefined) return undefined;
  return checkNamedSessionValue(TENANT_SESSION, getCookie(c, SESSION_COOKIE), adminToken, now);
}

/*
 * Named admins' sessions: `a1.<admin id>.<expiry>.<nonce>.<mac>`, keyed under
 * their own label, so they can pass neither as the bootstrap's session nor as
 * a tenant's.
 */
const ADMIN_SESSION: NamedSession = { version: 'a1', label: 'tollgate named admin session key v1', id: /^adm_[A-Za-z0-9_-]{8,32}$/ };

/** A signed session for named admin `adminId`, valid for one TTL. */
export function createAdminSessionValue(adminToken: string, adminId: string, now: number): string {
  return createNamedSessionValue(ADMIN_SESSION, adminToken, adminId, now + SESSION_TTL_MS);
}

/** Whether the request carries a signed, unexpired operator session: the bootstrap's or a named admin's (whose admin may since be revoked). */
export function hasOperatorSession(c: Context, adminToken: string | undefined, now: number): boolean {
  if (adminToken === undefined) return false;
  return hasValidSession(c, adminToken, now) || checkNamedSessionValue(ADMIN_SESSION, getCookie(c, SESSION_COOKIE), adminToken, now) !== undefined;
}

/**
 * The actor of the request's operator session: the bootstrap admin, or a
 * named admin while it is active (read from `admins` on every request, so a
 * revocation ends the session at once). Undefined: no session, a tenant's,
 * or a revoked admin's.
 */
export async function resolveSessionActor(c: Context, adminToken: string | undefined, admins: AdminStore | undefined, now: number): Promise<Actor | undefined> {
  if (adminToken === undefined) return undefined;
  const value = getCookie(c, SESSION_COOKIE);
  if (checkSessionValue(value, adminToken, now) === 'valid') return BOOTSTRAP_ACTOR;
  const adminId = checkNamedSessionValue(ADMIN_SESSION, value, adminToken, now);
  if (adminId === undefined || admins === undefined) return undefined;
  return admins.activeAdmin({ adminId });
}

/**
 * Who the request acts as, once the dashboard's session check (routes.tsx) or
 * the admin API's token check (src/admin/routes.ts) let it in: an operator's
 * Actor with its role (src/domain/admins.ts), or undefined for a tenant's
 * read-only session. Writes call `ops.as(actor)` with it (src/admin/ops.ts),
 * which refuses what the role does not allow.
 */
export function sessionActor(c: Context<AppEnv>): Actor | undefined {
  return c.get('actor');
}
