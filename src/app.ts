/**
 * Builds the Hono app from Tollgate's parts: health, metrics, the admin API,
 * the dashboard and the proxy routes, with one error renderer. No
 * environment, no network, no listen: tests call `app.request(…)` on it, the
 * composition root (tollgate.ts) builds it, `main.ts` serves it.
 */
import { Hono } from 'hono';
import type { AdminOps } from './admin/ops.js';
import { createAdminRoutes } from './admin/routes.js';
import type { AppEnv } from './app-env.js';
import { createDashboardApiRoutes, createDashboardRoutes, isDashboardSession, type LimitSnapshot } from './dashboard/index.js';
import type { TollgateDatabase } from './db/open.js';
import { TollgateError, renderError } from './errors.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import type { PipelineDeps } from './pipeline/deps.js';
import { createProxyRoutes } from './pipeline/routes.js';
import { newRequestId } from './request-id.js';

export interface AppDeps {
  /** Everything the request path needs. */
  readonly pipeline: PipelineDeps;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The admin API's operations and token (disabled without a token). */
  readonly admin: { readonly ops: AdminOps; readonly token: string | undefined };
  /** The database the dashboard reads (rollups and the newest ledger rows). */
  readonly database: TollgateDatabase;
  /** The limiter's live view of a key's buckets, for the dashboard's key page. */
  readonly limitSnapshot?: LimitSnapshot;
  /** Flipped on SIGTERM: /readyz turns 503 and connections are closed after their response. */
  readonly lifecycle: { shuttingDown: boolean };
  /** The dashboard's and admin API's clock (tests fix it). */
  readonly now?: () => number;
}

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { lifecycle, metrics } = deps;

  app.use('*', async function assignRequestId(c, next) {
    c.set('requestId', newRequestId());
    await next();
    if (lifecycle.shuttingDown) c.res.headers.set('connection', 'close');
  });

  app.get('/healthz', (c) => c.json({ status: 'ok' }, 200, { 'x-request-id': c.get('requestId') }));
  app.get('/readyz', (c) =>
    lifecycle.shuttingDown
      ? c.json({ status: 'shutting_down' }, 503, { 'x-request-id': c.get('requestId') })
      : c.json({ status: 'ready' }, 200, { 'x-request-id': c.get('requestId') }),
  );

  app.get('/metrics', async (c) => {
    metrics.ledgerQueueDepth.set(deps.pipeline.ledger.queueDepth);
    const { body, contentType } = await metrics.render();
    return c.body(body, 200, { 'content-type': contentType, 'x-request-id': c.get('requestId') });
  });

  const dashboard = { database: deps.database, adminToken: deps.admin.token, limitSnapshot: deps.limitSnapshot, ...(deps.now ? { now: deps.now } : {}) };
  app.route(
    '/admin/api',
    createAdminRoutes({
      ops: deps.admin.ops,
      adminToken: deps.admin.token,
      // The dashboard's session cookie opens the admin API's reads (not its writes).
      isAuthorized: (c) => isDashboardSession(c, deps.admin.token, (deps.now ?? Date.now)()),
      databasePath: deps.database.path,
      ...(deps.now ? { now: deps.now } : {}),
    }),
  );
  // After the admin API: its token check runs first for /admin/api/dashboard too.
  app.route('/admin/api/dashboard', createDashboardApiRoutes(dashboard));
  app.route('/dashboard', createDashboardRoutes(dashboard));
  app.route('/', createProxyRoutes(deps.pipeline));

  app.notFound((c) => {
    const known = KNOWN_PATHS.has(c.req.path) || c.req.path.startsWith('/admin/api/');
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

const KNOWN_PATHS = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses', '/v1/models', '/healthz', '/readyz', '/metrics']);

/** A cause for the logs: class and message only (never a request/headers object). */
function describeCause(cause: unknown): string | undefined {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${cause.name}${typeof code === 'string' ? ` ${code}` : ''}: ${cause.message}`;
  }
  return cause === undefined ? undefined : String(cause);
}
