/**
 * A tenant's read-only session on the admin API, and the operator's API for
 * dashboard tokens.
 *
 * The dashboard's pages poll /admin/api/dashboard/… and link the CSV exports
 * under /admin/api, which an operator's session reads unscoped. A tenant's
 * session never reaches those handlers as they are: {@link createTenantGate}
 * runs in front of the admin API and answers every request that carries a
 * tenant session itself —
 * - reads only (GET/HEAD; anything else is 401: writes need the admin token);
 * - the dashboard's JSON from the tenant's narrowed reads (tenant-scope.ts),
 *   a key's lists in pages included (key-lists.ts);
 * - `/keys`, `/keys/:ref`, `/tenants`, `/tenants/:ref` of its own tenant;
 * - `/spend`, `/spend.csv`, `/ledger.csv`, `/ledger.ndjson` with the tenant
 *   filter forced to its own (and a `key` that must be one of its keys),
 *   passed on to the admin API's own handlers;
 * - everything else, and any key or tenant that is not its own: 404.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { actorOf, type ActingAdminOps, type AdminOps } from '../admin/ops.js';
import type { Actor } from '../domain/admins.js';
import { createAdminRoutes } from '../admin/routes.js';
import type { AppEnv } from '../app-env.js';
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import { renderError, TollgateError } from '../domain/errors.js';
import type { KeyView } from '../domain/keys.js';
import type { LedgerExporter } from '../reports/export.js';
import { buildKeyPage } from './key-view.js';
import { readKeyList, type KeyList } from './key-lists.js';
import { buildKeys } from './keys-page.js';
import { parseKeysQuery } from './keys-query.js';
import { buildOverview } from './overview.js';
import { hasOperatorSession, tenantSessionTokenId } from './session.js';
import type { DashboardTokenStore } from '../storage/tenant-tokens.js';
import type { DashboardReads } from '../storage/dashboard-reads.js';
import type { LimitSnapshot } from './view-context.js';
import { viewContextFor, type Viewer } from './viewer.js';

export interface TenantGateDeps {
  readonly database: TollgateDatabase;
  /** Where dashboard tokens are kept: PostgreSQL on replicas, else the SQLite file. */
  readonly tokens: DashboardTokenStore;
  /** The dashboard's reads (src/storage/dashboard-reads.ts). */
  readonly reads: DashboardReads;
  readonly adminToken: string | undefined;
  readonly ops: ActingAdminOps;
  readonly now?: () => number;
  readonly limitSnapshot?: LimitSnapshot | undefined;
  /** What a tenant's ledger export reads (the admin API's, with the tenant forced). */
  readonly exportLedger?: LedgerExporter | undefined;
}

/** What a tenant's session reads as: a viewer, so nothing it reaches can write (it is never in the audit trail). */
const TENANT_READER: Actor = Object.freeze({ kind: 'admin', id: 'tenant-session', name: 'tenant-session', role: 'viewer' });

/** Paths a tenant may read through the admin API's own handlers, with its tenant forced. */
const SCOPED_EXPORTS = new Set(['/spend', '/spend.csv', '/ledger.csv', '/ledger.ndjson']);

/** A path segment decoded, or undefined when its percent-encoding is broken (then nothing can match it). */
function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** A 404 that names nothing: it must not confirm that another tenant's key or tenant exists. */
function notFound(what: 'key' | 'tenant'): TollgateError {
  return new TollgateError('not_found', `no such ${what}`);
}

/** Middleware for `/admin/api/*`: requests with a tenant session are answered here, every other passes on unchanged. */
export function createTenantGate(deps: TenantGateDeps): MiddlewareHandler<AppEnv> {
  const now = deps.now ?? Date.now;
  const { adminToken } = deps;
  // The admin API's handlers, reached only from here and only with the tenant filter already forced.
  const requestIds = new WeakMap<Request, string>();
  const inner = new Hono<AppEnv>();
  inner.use('*', async function carryRequestId(c, next) {
    c.set('requestId', requestIds.get(c.req.raw) ?? '');
    await next();
  });
  inner.route('/admin/api', createAdminRoutes({ ops: deps.ops, adminToken, presetActor: TENANT_READER, exportLedger: deps.exportLedger, now }));
  const ops: AdminOps = deps.ops.as(TENANT_READER);
  inner.onError((error, c) => {
    const rendered = renderError(error instanceof TollgateError ? error : new TollgateError('internal_error', 'Tollgate hit an internal error.'));
    return c.json(rendered.body, rendered.status as 400, { 'x-request-id': c.get('requestId') });
  });

  return async function tenantGate(c, next) {
    if (adminToken === undefined || c.req.header('authorization') !== undefined || hasOperatorSession(c, adminToken, now())) return next();
    const tokenId = tenantSessionTokenId(c, adminToken, now());
    if (tokenId === undefined) return next();
    const tenantFound = await deps.tokens.activeViewer({ tokenId }, now());
    if (tenantFound === undefined) throw new TollgateError('invalid_admin_token', 'This dashboard session has ended: its token was revoked or has expired.');
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD')
      throw new TollgateError('invalid_admin_token', 'A tenant dashboard session is read-only; changes need the admin token.');
    c.header('cache-control', 'no-store');
    c.header('x-content-type-options', 'nosniff');
    const viewer: Extract<Viewer, { kind: 'tenant' }> = { kind: 'tenant', tenant: tenantFound };
    const tenant = viewer.tenant;
    const path = c.req.path.replace(/^\/admin\/api/, '');
    const ctx = () => viewContextFor(deps, now(), viewer);
    if (path === '/dashboard/overview') return c.json(await buildOverview(ctx()));
    if (path === '/dashboard/keys') return c.json(await buildKeys(ctx(), parseKeysQuery(c.req.query(), true)));
    const keyPage = /^\/dashboard\/keys\/([^/]+)$/.exec(path);
    if (keyPage) {
      const id = decoded(keyPage[1]!);
      const view = id === undefined ? undefined : await buildKeyPage(ctx(), id);
      if (view === undefined) throw notFound('key');
      return c.json(view);
    }
    const keyList = /^\/dashboard\/keys\/([^/]+)\/(users|tags|sessions|requests)$/.exec(path);
    if (keyList) {
      const id = decoded(keyList[1]!);
      const page = id === undefined ? undefined : await readKeyList(ctx(), id, keyList[2] as KeyList, c.req.query());
      if (page === undefined) throw notFound('key');
      return c.json(page);
    }
    const ownKeys = async (): Promise<KeyView[]> => ops.listKeys({ tenant: tenant.tenantId, includeRevoked: true });
    const ownKey = async (ref: string): Promise<KeyView> => {
      const keys = await ownKeys();
      const found =
        keys.find((key) => key.id === ref) ?? keys.find((key) => key.name === ref && key.revokedAt === null) ?? keys.filter((key) => key.prefix === ref)[0];
      if (found === undefined) throw notFound('key');
      return found;
    };
    if (path === '/keys') {
      const all = c.req.query('all') === '1' || c.req.query('all') === 'true';
      return c.json({ data: (await ownKeys()).filter((key) => all || key.revokedAt === null) });
    }
    const keyRef = /^\/keys\/([^/]+)$/.exec(path);
    if (keyRef) return c.json(await ownKey(decoded(keyRef[1]!) ?? ''));
    const isOwnTenant = (ref: string) => ref === tenant.tenantId || ref === tenant.tenant;
    if (path === '/tenants') return c.json({ data: [await ops.getTenant(tenant.tenantId)] });
    const tenantRef = /^\/tenants\/([^/]+)$/.exec(path);
    if (tenantRef) {
      if (!isOwnTenant(decoded(tenantRef[1]!) ?? '')) throw notFound('tenant');
      return c.json(await ops.getTenant(tenant.tenantId));
    }
    if (SCOPED_EXPORTS.has(path)) {
      const url = new URL(c.req.url);
      const askedTenant = url.searchParams.get('tenant');
      if (askedTenant !== null && !isOwnTenant(askedTenant)) throw notFound('tenant');
      url.searchParams.set('tenant', tenant.tenantId);
      const askedKey = url.searchParams.get('key');
      if (askedKey !== null) url.searchParams.set('key', (await ownKey(askedKey)).id);
      const forwarded = new Request(url, { method: c.req.method, headers: { accept: c.req.header('accept') ?? '*/*' } });
      requestIds.set(forwarded, c.get('requestId'));
      const answer = await inner.fetch(forwarded, c.env);
      const headers = new Headers(answer.headers);
      headers.set('cache-control', 'no-store');
      return new Response(answer.body, { status: answer.status, headers });
    }
    throw new TollgateError('unknown_url', `Invalid URL (${c.req.method} ${c.req.path}).`);
  };
}

const createBody = z.strictObject({
  tenant: z.string().min(1),
  label: z.string().max(200).optional(),
  /** Milliseconds since the epoch, or null for none. */
  expiresAt: z.number().int().positive().nullable().optional(),
});

/**
 * The operator's API for dashboard tokens, at /admin/api/dashboard-tokens
 * (behind the admin API's own check, which sets the actor and its role):
 * issuing and revoking are audited under the actor.
 */
export function createDashboardTokenRoutes(deps: { readonly ops: ActingAdminOps }): Hono<AppEnv> {
  const api = new Hono<AppEnv>();
  api.get('/', async (c) => c.json({ data: await deps.ops.as(actorOf(c)).listTenantTokens({ tenant: c.req.query('tenant') }) }));
  api.post('/', async (c: Context<AppEnv>) => {
    let json: unknown;
    try {
      json = await c.req.json();
    } catch {
      throw new TollgateError('invalid_json', 'The request body is not valid JSON.');
    }
    const parsed = createBody.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue?.path.join('.') ?? null;
      throw new TollgateError('invalid_request', `${param ? `${param}: ` : ''}${issue?.message ?? 'invalid body'}`, { param });
    }
    const issued = await deps.ops.as(actorOf(c)).createTenantToken(parsed.data);
    return c.json({ token: issued.token, ...issued.view }, 201);
  });
  api.post('/:ref/revoke', async (c) => c.json(await deps.ops.as(actorOf(c)).revokeTenantToken(c.req.param('ref'))));
  return api;
}
