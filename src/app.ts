/**
 * Builds the Hono app from Tollgate's parts: health, metrics, the admin API,
 * the dashboard and the proxy routes, with one error renderer. No
 * environment, no network, no listen: tests call `app.request(…)` on it, the
 * composition root (tollgate.ts) builds it, `main.ts` serves it.
 */
import { Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import type { ActingAdminOps } from './admin/ops.js';
import { createAdminRoutes, tokenMatches } from './admin/routes.js';
import type { AdminStore } from './storage/admins.js';
import type { AppEnv } from './app-env.js';
import { createDashboardApiRoutes, createDashboardRoutes, resolveSessionActor, type LimitSnapshot } from './dashboard/index.js';
import type { DashboardReads } from './storage/dashboard-reads.js';
import type { LedgerExportSource } from './storage/ledger-export.js';
import type { TollgateDatabase } from './storage/sqlite/open.js';
import { createDashboardTokenRoutes, createTenantGate } from './dashboard/tenant-access.js';
import { ledgerExporter } from './reports/export.js';
import type { DashboardTokenStore } from './storage/tenant-tokens.js';
import type { ReconciliationStore } from './reconcile/store.js';
import { TollgateError, renderError } from './domain/errors.js';
import type { LedgerWriter } from './storage/ledger.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import type { PipelineDeps } from './pipeline/deps.js';
import { lookUpRequest, REQUEST_LOOKUP_PATH } from './pipeline/request-lookup.js';
import type { RequestReads } from './storage/request-reads.js';
import type { UpstreamProbe } from './upstreams/probe.js';
import { createProxyRoutes } from './pipeline/routes.js';
import { newRequestId } from './request-id.js';
import { sendDeferred } from './http/stream-sinks.js';
import { bearerOf, checkPresentedSecret, ownSecretGuard, tooManyAttempts, type SecretGuard } from './http/secret-check.js';
import { SecretThrottle } from './http/secret-throttle.js';
import { sqliteAdmins } from './storage/sqlite/admins.js';

export interface AppDeps {
  /** Everything the request path needs. */
  readonly pipeline: PipelineDeps;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * The admin API's operations (taken for each request's actor), its bootstrap token (disabled
   * without one) and the named admins whose tokens open it too (the node's file's without).
   */
  readonly admin: { readonly ops: ActingAdminOps; readonly token: string | undefined; readonly admins?: AdminStore | undefined };
  /** The node's own database (tenants' dashboard tokens and reconciliations without `shared`). */
  readonly database: TollgateDatabase;
  /** What the dashboard reads: the node's file or, on a replica, every node's rows in PostgreSQL (src/storage/dashboard-reads.ts). */
  readonly dashboardReads: DashboardReads;
  /** What the raw ledger exports read (src/storage/ledger-export.ts); none for an in-memory database (the export routes are then 404). */
  readonly ledgerExport: LedgerExportSource | undefined;
  /** Tenants' dashboard tokens and reconciliation results, where every node sees them (PostgreSQL on a replica). */
  readonly shared: {
    readonly dashboardTokens: DashboardTokenStore;
    readonly reconciliations: ReconciliationStore;
    /** A request's ledger row by its id, for its key (`GET /v1/tollgate/requests/{id}`; none = not served). */
    readonly requests?: RequestReads;
  };
  /** The limiter's live view of a key's buckets, for the dashboard's key page. */
  readonly limitSnapshot?: LimitSnapshot;
  /** Flipped on SIGTERM: /readyz turns 503 and connections are closed after their response. */
  readonly lifecycle: { shuttingDown: boolean };
  /** The upstreams' last check, shown by /readyz (src/upstreams/probe.ts); none = /readyz says only ready or shutting down. */
  readonly upstreamProbe?: UpstreamProbe;
  /** The dashboard's and admin API's clock (tests fix it). */
  readonly now?: () => number;
  /** /metrics: its bearer token (none = open), and whether it is served on its own port instead (main.ts). */
  readonly metricsAccess?: { readonly token: string | undefined; readonly ownPort: boolean };
  /** Proxies believed about X-Forwarded-For (TOLLGATE_TRUSTED_PROXIES). */
  readonly trustedProxies?: ReadonlySet<string>;
  /** The per-address brake on guessing every token the app checks (one of its own without; main.ts shares it with the metrics port). */
  readonly secretThrottle?: SecretThrottle;
}

export function createApp(deps: AppDeps): Hono<AppEnv> {
  // One regular expression per method matches every route: hono's default router walked a trie, splitting the
  // path, on every request (docs/performance.md, "Slow paths the profile named"). It refuses a static segment
  // beside a parameter (`/keys/new` and `/keys/:id`) on the first request, so a route that breaks it fails
  // every test instead of slowing every request down.
  const app = new Hono<AppEnv>({ router: new RegExpRouter() });
  const { lifecycle, metrics } = deps;
  // One throttle for every surface that compares a presented secret: guesses on any of them count for the address.
  const guard: SecretGuard = {
    throttle: deps.secretThrottle ?? new SecretThrottle(),
    trustedProxies: deps.trustedProxies ?? new Set(),
    now: deps.now ?? Date.now,
  };

  app.use('*', async function assignRequestId(c, next) {
    c.set('requestId', newRequestId());
    await next();
    if (lifecycle.shuttingDown) c.res.headers.set('connection', 'close');
    // A relayed stream is written to the Node response only now, its headers final.
    sendDeferred(c.res);
  });

  // Someone who opens the bare address: a browser lands on the dashboard, an API client is told where things are.
  app.get('/', (c) => {
    c.header('x-request-id', c.get('requestId'));
    if ((c.req.header('accept') ?? '').includes('text/html')) return c.redirect('/dashboard', 302);
    return c.json({
      service: 'tollgate',
      message: 'Tollgate is running: the dashboard is at /dashboard, the OpenAI-compatible API at /v1.',
      dashboard: '/dashboard',
      api: '/v1',
      health: '/healthz',
    });
  });
  app.get('/healthz', (c) => c.json({ status: 'ok' }, 200, { 'x-request-id': c.get('requestId') }));
  app.get('/readyz', (c) => {
    if (lifecycle.shuttingDown) return c.json({ status: 'shutting_down' }, 503, { 'x-request-id': c.get('requestId') });
    if (deps.upstreamProbe === undefined) return c.json({ status: 'ready' }, 200, { 'x-request-id': c.get('requestId') });
    // The last probe's results (a new probe starts behind them when they are old): only a key or base URL no request
    // can get through is 503; a provider outage is not, or every node would leave the load balancer at once.
    const results = deps.upstreamProbe.latest();
    const upstreams = results.map((r) => ({
      name: r.name,
      state: r.state,
      status: r.status,
      ...(r.message === undefined ? {} : { message: r.message }),
      checked_at: r.checkedAt === null ? null : new Date(r.checkedAt).toISOString(),
    }));
    const misconfigured = results.some((r) => r.misconfigured);
    return c.json({ status: misconfigured ? 'upstream_misconfigured' : 'ready', upstreams }, misconfigured ? 503 : 200, {
      'x-request-id': c.get('requestId'),
    });
  });

  if (deps.metricsAccess?.ownPort !== true) app.route('/', createMetricsRoutes(metrics, deps.pipeline.ledger, deps.metricsAccess?.token, guard));

  const tokens = deps.shared.dashboardTokens;
  const admins = deps.admin.admins ?? sqliteAdmins(deps.database);
  const reconciliations = deps.shared.reconciliations;
  const dashboard = {
    database: deps.database,
    tokens,
    reads: deps.dashboardReads,
    adminToken: deps.admin.token,
    admins,
    limitSnapshot: deps.limitSnapshot,
    ...(deps.now ? { now: deps.now } : {}),
    guard,
    reconciliations: () => reconciliations.latestPerProvider(),
    // The dashboard's writes go through the admin API's operations (src/dashboard/write-routes.tsx).
    ops: deps.admin.ops,
  };
  const exportLedger = deps.ledgerExport === undefined ? undefined : ledgerExporter(deps.ledgerExport);
  // A tenant's read-only dashboard session is answered (scoped to its tenant) before the admin API sees it.
  app.use(
    '/admin/api/*',
    createTenantGate({
      database: deps.database,
      tokens,
      reads: deps.dashboardReads,
      adminToken: deps.admin.token,
      ops: deps.admin.ops,
      limitSnapshot: deps.limitSnapshot,
      exportLedger,
      ...(deps.now ? { now: deps.now } : {}),
    }),
  );
  app.route(
    '/admin/api',
    createAdminRoutes({
      ops: deps.admin.ops,
      adminToken: deps.admin.token,
      admins,
      // An operator's dashboard session opens the admin API's reads (not its writes).
      sessionActor: (c) => resolveSessionActor(c, deps.admin.token, admins, (deps.now ?? Date.now)()),
      exportLedger,
      guard,
      ...(deps.now ? { now: deps.now } : {}),
    }),
  );
  // After the admin API: its token check runs first for /admin/api/dashboard too.
  app.route('/admin/api/dashboard', createDashboardApiRoutes(dashboard));
  app.route('/admin/api/dashboard-tokens', createDashboardTokenRoutes({ ops: deps.admin.ops }));
  app.route('/dashboard', createDashboardRoutes(dashboard));
  app.route('/', createProxyRoutes(deps.pipeline, deps.logger));
  const requests = deps.shared.requests;
  if (requests !== undefined) {
    const { keys, now, estimate } = deps.pipeline;
    app.get(REQUEST_LOOKUP_PATH, (c) => lookUpRequest(c, { keys, now, requests, prices: estimate.prices }));
  }

  app.notFound((c) => {
    const metricsElsewhere = c.req.path === '/metrics' && deps.metricsAccess?.ownPort === true;
    const known = (KNOWN_PATHS.has(c.req.path) && !metricsElsewhere) || c.req.path.startsWith('/admin/api/');
    throw known
      ? new TollgateError('method_not_allowed', `Method ${c.req.method} is not allowed on ${c.req.path}.`)
      : new TollgateError('unknown_url', `Invalid URL (${c.req.method} ${c.req.path}).`);
  });

  app.onError((error, c) => {
    const requestId = c.get('requestId') ?? newRequestId();
    const known = error instanceof TollgateError ? error : undefined;
    const rendered = renderError(known ?? new TollgateError('internal_error', 'Tollgate hit an internal error; the request id identifies it in the logs.'));
    if (known === undefined) {
      deps.logger.error({ requestId, err: error, path: c.req.path }, 'unhandled error');
    } else if (rendered.status >= 500 || rendered.status === 499) {
      deps.logger.warn({ requestId, code: known.code, path: c.req.path, cause: describeCause(known.cause) }, known.message);
    } else {
      deps.logger.info({ requestId, code: known.code, status: rendered.status, path: c.req.path }, known.message);
    }
    const headers: Record<string, string> = { ...known?.headers, 'x-request-id': requestId };
    // The rest of an oversized body is not worth reading: close after answering.
    if (known?.code === 'body_too_large') headers.connection = 'close';
    return c.json(rendered.body, rendered.status as 400, headers);
  });

  return app;
}

/**
 * `GET /metrics`, behind a bearer token when one is configured: label values
 * name keys and models, which not every network that reaches the proxy
 * should read. Mounted on the proxy's app, or alone on its own port. The
 * token is compared only while the client's address has checks left
 * (src/http/secret-throttle.ts).
 */
function createMetricsRoutes(metrics: Metrics, ledger: Pick<LedgerWriter, 'queueDepth'>, token: string | undefined, guard: SecretGuard): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.get('/metrics', async (c) => {
    if (token !== undefined) {
      const bearer = bearerOf(c);
      const outcome = bearer === undefined ? undefined : await checkPresentedSecret(c, guard, () => (tokenMatches(bearer, token) ? true : undefined));
      if (outcome?.kind === 'throttled') throw tooManyAttempts(outcome.retryAfterMs);
      if (outcome?.kind !== 'right') {
        throw new TollgateError('invalid_metrics_token', 'A valid metrics token is required (Authorization: Bearer <TOLLGATE_METRICS_TOKEN>).');
      }
    }
    metrics.ledgerQueueDepth.set(ledger.queueDepth);
    const { body, contentType } = await metrics.render();
    return c.body(body, 200, { 'content-type': contentType, 'x-request-id': c.get('requestId') });
  });
  return routes;
}

/**
 * The app served on TOLLGATE_METRICS_PORT: /metrics alone. `guard`: the
 * proxy's throttle (main.ts shares it, so guesses on either port count
 * together) and its trusted proxies; one of its own without.
 */
export function createMetricsApp(
  metrics: Metrics,
  ledger: Pick<LedgerWriter, 'queueDepth'>,
  token: string | undefined,
  guard: SecretGuard = ownSecretGuard(),
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use('*', async function assignRequestId(c, next) {
    c.set('requestId', newRequestId());
    await next();
  });
  app.route('/', createMetricsRoutes(metrics, ledger, token, guard));
  app.notFound(() => {
    throw new TollgateError('unknown_url', 'This port serves /metrics only.');
  });
  app.onError((error, c) => {
    const known = error instanceof TollgateError ? error : new TollgateError('internal_error', 'Tollgate hit an internal error.');
    const rendered = renderError(known);
    // The error's own headers too: a throttled scraper is told its Retry-After.
    return c.json(rendered.body, rendered.status as 400, { ...known.headers, 'x-request-id': c.get('requestId') });
  });
  return app;
}

const KNOWN_PATHS = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses', '/v1/models', '/healthz', '/readyz', '/metrics']);

/** A cause for the logs: class and message only (never a request/headers object). */
function describeCause(cause: unknown): string | undefined {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${cause.name}${typeof code === 'string' ? ` ${code}` : ''}: ${cause.message}`;
  }
  return cause === undefined ? undefined : String(cause);
}
