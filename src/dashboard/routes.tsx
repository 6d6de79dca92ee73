/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The dashboard's HTTP side: pages under /dashboard (login, overview, keys,
 * key) and the JSON they poll under /admin/api/dashboard.
 *
 * Access: the admin token, a named admin's token (docs/admins.md) or a
 * tenant's dashboard token, presented once in the login form (POST, never in
 * a URL), buys a signed session cookie (see session.ts); each request's
 * operator session resolves to an Actor with a role (`sessionActor(c)`). The JSON endpoints take
 * that cookie or the admin API's bearer token. With no token configured the
 * pages say the dashboard is disabled and the JSON answers `admin_disabled`.
 * Every presented token goes through the app's per-address throttle
 * (src/http/secret-throttle.ts): no token is compared while the address is
 * out of checks.
 */
import { Hono, type Context } from 'hono';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { TollgateError } from '../domain/errors.js';
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import { readBodyBytes } from '../http/body.js';
import { bearerActor, tokenActor } from '../admin/identify.js';
import { isAdminTokenText } from '../storage/admin-rules.js';
import type { AdminStore } from '../storage/admins.js';
import type { Actor } from '../domain/admins.js';
import type { AppEnv } from '../app-env.js';
import type { StoredReconciliation } from '../reconcile/store.js';
import { loadAssets, type AssetName } from './assets.js';
import { checkPresentedSecret, ownSecretGuard, retryAfterSeconds, type SecretGuard } from '../http/secret-check.js';
import { KeyPage } from './key-page.js';
import { buildKeyPage } from './key-view.js';
import { readKeyList, type KeyList } from './key-lists.js';
import { buildKeys, KeysPage } from './keys-page.js';
import { parseKeysQuery } from './keys-query.js';
import { DisabledPage, LoginPage, NotFoundPage, renderDocument } from './layout.js';
import { buildOverview, OverviewPage } from './overview.js';
import type { DashboardReads } from '../storage/dashboard-reads.js';
import {
  clearedCookieHeader,
  createAdminSessionValue,
  createSessionValue,
  createTenantSessionValue,
  isHttps,
  resolveSessionActor,
  sessionActor,
  sessionCookieHeader,
} from './session.js';
import { isDashboardTokenText } from './tenant-tokens.js';
import { sqliteDashboardTokens } from '../storage/sqlite/tenant-tokens.js';
import { sqliteAdmins } from '../storage/sqlite/admins.js';
import type { DashboardTokenStore } from '../storage/tenant-tokens.js';
import type { LimitSnapshot, ViewContext } from './view-context.js';
import { viewContextFor, viewerOf, type Viewer } from './viewer.js';
import type { ActingAdminOps } from '../admin/ops.js';
import { keyPageActions, keysToolbar, registerWriteRoutes, type WriteEnv } from './write-routes.js';

export interface DashboardDeps {
  readonly database: TollgateDatabase;
  /** What the pages read: the node's file, or every node's rows in PostgreSQL on a replica (src/storage/dashboard-reads.ts). */
  readonly reads: DashboardReads;
  /** TOLLGATE_ADMIN_TOKEN; the dashboard is disabled without one. */
  readonly adminToken: string | undefined;
  readonly now?: () => number;
  /** The limiter's live view of a key's buckets; the key page says "not available" without it. */
  readonly limitSnapshot?: LimitSnapshot | undefined;
  /** The app's per-address brake on guessing tokens, shared by every surface (a guard of its own without, believing `trustedProxies`). */
  readonly guard?: SecretGuard | undefined;
  /** Proxies believed about X-Forwarded-For (TOLLGATE_TRUSTED_PROXIES), for a guard of its own: the throttle counts per real client. */
  readonly trustedProxies?: ReadonlySet<string>;
  /** Where tenants' dashboard tokens are kept: PostgreSQL on a replica; SQLite's of `database` without. */
  readonly tokens?: DashboardTokenStore | undefined;
  /** Named admins (docs/admins.md): PostgreSQL on a replica; SQLite's of `database` without. */
  readonly admins?: AdminStore | undefined;
  /** The newest reconciliation result of each provider, for the overview's panel (operators only). */
  readonly reconciliations?: () => Promise<StoredReconciliation[]>;
  /** The admin API's operations, taken for the session's actor: the dashboard's writes and the audit page (write-routes.tsx); read-only without them. */
  readonly ops?: ActingAdminOps | undefined;
}

/** Every page's security headers: nothing inline, nothing from elsewhere, never framed or cached. */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Same-origin: our own form posts carry their Origin (write-guard.ts checks it); other sites get nothing.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** The largest login form accepted (a token and a return path). */
const MAX_LOGIN_BODY = 8192;

/** The view context of a viewer: the reads, narrowed for a tenant (viewer.ts). */
function contextOf(deps: DashboardDeps, now: () => number, viewer: Viewer): ViewContext {
  return viewContextFor(deps, now(), viewer);
}

/** Where to go after logging in: a dashboard path, never another site. */
function safeNext(value: string | null | undefined): string {
  if (value === null || value === undefined) return '/dashboard';
  return /^\/dashboard(?:[/?][^\\\s]*)?$/.test(value) && !value.startsWith('/dashboard/login') ? value : '/dashboard';
}

async function page(c: Context<AppEnv>, element: JSX.Element, status = 200, extra: Record<string, string> = {}): Promise<Response> {
  return c.html(await renderDocument(element), status as 200, { ...PAGE_HEADERS, ...extra });
}

function redirect(c: Context<AppEnv>, location: string, extra: Record<string, string> = {}): Response {
  return c.body(null, 303, { location, 'cache-control': 'no-store', ...extra });
}

function pathWithQuery(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  return `${url.pathname}${url.search}`;
}

/** The pages, to mount at /dashboard. */
export function createDashboardRoutes(deps: DashboardDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const now = deps.now ?? Date.now;
  const guard = deps.guard ?? ownSecretGuard({ trustedProxies: deps.trustedProxies, now });
  const assets = loadAssets();
  const adminToken = deps.adminToken;
  const tokens = deps.tokens ?? sqliteDashboardTokens(deps.database);
  const admins = deps.admins ?? sqliteAdmins(deps.database);
  const stores = { tokens, admins };

  // Static code and styles, no secrets: served without a session (the login page needs them).
  app.get('/assets/:name', (c) => {
    const asset = assets.get(c.req.param('name') as AssetName);
    if (asset === undefined) return c.text('Not found', 404, { 'x-content-type-options': 'nosniff' });
    return c.body(asset.body, 200, {
      'content-type': asset.contentType,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
  });

  app.use('*', async function requireAdminToken(c, next) {
    if (adminToken === undefined) return page(c, <DisabledPage />, 404);
    await next();
  });

  app.get('/login', async (c) => {
    const next = safeNext(c.req.query('next'));
    if ((await viewerOf(c, stores, adminToken, now())) !== undefined) return redirect(c, next);
    return page(c, <LoginPage next={next} info={c.req.query('loggedOut') === undefined ? undefined : 'You are logged out.'} />);
  });

  app.post('/login', async (c) => {
    const token = adminToken!;
    const body = new URLSearchParams((await readBodyBytes(c.req.raw, MAX_LOGIN_BODY)).toString('utf8'));
    const next = safeNext(body.get('next'));
    const presented = body.get('token') ?? '';
    const tenantLike = isDashboardTokenText(presented.trim());
    const namedLike = isAdminTokenText(presented.trim());
    // The bootstrap token, a named admin's, or a tenant's read-only one (tenant-tokens.ts), compared only
    // while this address has checks left: a throttled address learns nothing, whichever token it sends.
    const outcome = await checkPresentedSecret(c, guard, async (): Promise<Viewer | undefined> => {
      const actor = await tokenActor(presented, token, admins);
      if (actor !== undefined) return { kind: 'admin', actor };
      if (!tenantLike) return undefined;
      const tenant = await tokens.activeViewer({ secret: presented.trim() }, now());
      return tenant === undefined ? undefined : { kind: 'tenant', tenant };
    });
    if (outcome.kind === 'throttled') {
      const seconds = retryAfterSeconds(outcome.retryAfterMs);
      const error = `Too many wrong tokens from your address. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`;
      return page(c, <LoginPage next={next} error={error} />, 429, { 'retry-after': String(seconds) });
    }
    if (outcome.kind === 'wrong') {
      const error = tenantLike
        ? 'That dashboard token is unknown, revoked or expired. Ask your operator for a new one.'
        : namedLike
          ? 'That admin token is unknown or revoked. Ask an admin for a new one.'
          : 'That is not the admin token. Check TOLLGATE_ADMIN_TOKEN and try again.';
      return page(c, <LoginPage next={next} error={error} />, 401);
    }
    const viewer = outcome.value;
    const value =
      viewer.kind === 'tenant'
        ? createTenantSessionValue(token, viewer.tenant.tokenId, now(), viewer.tenant.expiresAt)
        : viewer.actor.kind === 'admin'
          ? createAdminSessionValue(token, viewer.actor.id, now())
          : createSessionValue(token, now());
    return redirect(c, next, { 'set-cookie': sessionCookieHeader(value, isHttps(c)) });
  });

  app.post('/logout', (c) => redirect(c, '/dashboard/login?loggedOut=1', { 'set-cookie': clearedCookieHeader(isHttps(c)) }));

  // The viewer of each request: the operator, or one tenant while its token is active.
  const viewers = new WeakMap<Request, Viewer>();
  const viewer = (c: Context<AppEnv>): Viewer => viewers.get(c.req.raw)!;
  app.use('*', async function requireSession(c, next) {
    const found = await viewerOf(c, stores, adminToken, now());
    if (found === undefined) return redirect(c, `/dashboard/login?next=${encodeURIComponent(pathWithQuery(c))}`);
    viewers.set(c.req.raw, found);
    // Who the page's writes act as (session.ts, sessionActor); a tenant's session has none and writes nothing.
    if (found.kind === 'admin') c.set('actor', found.actor);
    await next();
  });

  const writes: WriteEnv = {
    ops: deps.ops,
    adminToken: adminToken!,
    viewer,
    context: (c) => contextOf(deps, now, viewer(c)),
    page: (c, element, status) => page(c, element, status),
    redirect: (c, location) => redirect(c, location),
  };
  registerWriteRoutes(app, writes);

  const overview = async (c: Context<AppEnv>) =>
    page(
      c,
      <OverviewPage view={await buildOverview(contextOf(deps, now, viewer(c)), viewer(c).kind === 'admin' ? await deps.reconciliations?.() : undefined)} />,
    );
  app.get('/', overview);
  app.get('/keys', async (c) =>
    page(c, <KeysPage view={await buildKeys(contextOf(deps, now, viewer(c)), parseKeysQuery(c.req.query(), false))} toolbar={keysToolbar(writes, c)} />),
  );
  app.get('/keys/:id', async (c) => {
    const view = await buildKeyPage(contextOf(deps, now, viewer(c)), c.req.param('id'));
    if (view === undefined) return page(c, <NotFoundPage message={`There is no key with id "${c.req.param('id')}".`} signedIn={true} />, 404);
    return page(c, <KeyPage view={view} actions={await keyPageActions(writes, c, view.key.id)} />);
  });
  app.all('*', (c) => {
    // `/dashboard/` and `/dashboard/keys/` are what people type: send them to the page.
    if (c.req.method === 'GET' && c.req.path.length > 1 && c.req.path.endsWith('/'))
      return redirect(c, c.req.path.replace(/\/+$/, '') + new URL(c.req.url).search);
    return page(c, <NotFoundPage message={`Nothing here: ${c.req.path}`} signedIn={true} />, 404);
  });
  return app;
}

/**
 * The operator a request is: a bearer token, the bootstrap's or a named
 * admin's (compared only while the address has checks left; a throttled one
 * is a 429), or (for the dashboard's own reads) an operator's session.
 */
async function operatorOf(c: Context<AppEnv>, adminToken: string, admins: AdminStore, guard: SecretGuard): Promise<Actor | undefined> {
  return (await bearerActor(c, adminToken, admins, guard)) ?? (await resolveSessionActor(c, adminToken, admins, guard.now()));
}

/** The JSON the pages poll, to mount at /admin/api/dashboard. */
export function createDashboardApiRoutes(deps: DashboardDeps): Hono<AppEnv> {
  const api = new Hono<AppEnv>();
  const now = deps.now ?? Date.now;
  const guard = deps.guard ?? ownSecretGuard({ trustedProxies: deps.trustedProxies, now });
  const admins = deps.admins ?? sqliteAdmins(deps.database);

  api.use('*', async function requireAdminOrSession(c, next) {
    if (deps.adminToken === undefined) {
      throw new TollgateError('admin_disabled', 'The admin API is disabled: start Tollgate with TOLLGATE_ADMIN_TOKEN set.');
    }
    const actor = await operatorOf(c, deps.adminToken, admins, guard);
    if (actor === undefined) {
      throw new TollgateError('invalid_admin_token', 'A valid admin token (Authorization: Bearer …) or dashboard session is required.');
    }
    // Reads only, which every role may do.
    c.set('actor', actor);
    await next();
    c.header('cache-control', 'no-store');
    c.header('x-content-type-options', 'nosniff');
  });

  const admin = (c: Context<AppEnv>): Viewer => ({ kind: 'admin', actor: sessionActor(c)! });
  api.get('/overview', async (c) => c.json(await buildOverview(contextOf(deps, now, admin(c)), await deps.reconciliations?.())));
  api.get('/keys', async (c) => c.json(await buildKeys(contextOf(deps, now, admin(c)), parseKeysQuery(c.req.query(), true))));
  api.get('/keys/:id', async (c) => {
    const view = await buildKeyPage(contextOf(deps, now, admin(c)), c.req.param('id'));
    if (view === undefined) throw new TollgateError('not_found', `no key with id "${c.req.param('id')}"`, { param: 'id' });
    return c.json(view);
  });
  // A key's lists in pages (key-lists.ts).
  api.get('/keys/:id/:list{users|tags|sessions|requests}', async (c) => {
    const page = await readKeyList(contextOf(deps, now, admin(c)), c.req.param('id'), c.req.param('list') as KeyList, c.req.query());
    if (page === undefined) throw new TollgateError('not_found', `no key with id "${c.req.param('id')}"`, { param: 'id' });
    return c.json(page);
  });
  return api;
}
