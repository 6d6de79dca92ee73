/**
 * Cross-site protection of the dashboard's writes. A write is a form POST
 * from a dashboard page, and it must show both:
 * - that it comes from this site: an `Origin` (or, without one, a `Referer`)
 *   whose host is the request's own; pages send their origin on same-origin
 *   requests only (Referrer-Policy same-origin), never to other sites;
 * - a CSRF token from the page: the hidden field `_csrf`, an HMAC of the
 *   session cookie's value under a key derived from the admin token, so it
 *   is bound to one login, needs no store, and a page of another site
 *   cannot read it.
 * The session cookie itself is SameSite=Strict (session.ts), so a
 * cross-site POST arrives without it anyway; the checks above hold even in
 * a browser that ignores SameSite.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { SESSION_COOKIE } from './session.js';

/** The form field that carries the token. */
export const CSRF_FIELD = '_csrf';

/** Domain separation: this key signs CSRF tokens and nothing else. */
const KEY_LABEL = 'tollgate dashboard csrf key v1';

/** The CSRF token of a session cookie value (what the pages put in every write form). */
function csrfTokenOf(adminToken: string, sessionValue: string): string {
  const key = createHmac('sha256', adminToken).update(KEY_LABEL).digest();
  return createHmac('sha256', key).update(sessionValue).digest('base64url');
}

/** The CSRF token of the request's session, for the forms of the page it gets. */
export function csrfTokenFor(c: Context, adminToken: string): string {
  return csrfTokenOf(adminToken, getCookie(c, SESSION_COOKIE) ?? '');
}

/** The host an `Origin` or `Referer` value names, or undefined when it names none (`null`, garbage). */
function hostOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.host.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the request says it comes from a page of this very host. */
function fromThisSite(c: Context): boolean {
  const host = (c.req.header('host') ?? new URL(c.req.url).host).toLowerCase();
  const origin = c.req.header('origin');
  if (origin !== undefined) return hostOf(origin) === host;
  const referer = c.req.header('referer');
  return referer !== undefined && hostOf(referer) === host;
}

/** Why a write is refused (a sentence for the 403 page), or undefined when it may go on. */
export function writeRefusal(c: Context, adminToken: string, presented: string | null): string | undefined {
  if (!fromThisSite(c)) return 'This change did not come from a page of this dashboard (its Origin is another site), so it was refused.';
  const expected = Buffer.from(csrfTokenFor(c, adminToken));
  const given = Buffer.from(presented ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return 'This form is out of date or did not come from this dashboard (its security token does not match your session). Reload the page and try again.';
  }
  return undefined;
}
