/**
 * The billed routes, one per API dialect (src/dialects/), all made by one factory. A billed
 * request crosses the pipeline's stages in order — each in its own module, see README "How it
 * works":
 *
 *   authenticate → estimate → admit → forward → relay → settle
 *
 * Every request that passes authentication ends as exactly one ledger row —
 * except refusals past a key's allowance (TOLLGATE_REFUSAL_ROWS a minute),
 * which are only counted in the rollups (src/storage/sqlite/refusal-allowance.ts).
 * Errors Tollgate itself answers on a dialect with an error shape of its own
 * (Anthropic's) are told in that shape; upstreams' own answers pass through as
 * they came.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../app-env.js';
import { DIALECTS, type Dialect } from '../dialects/index.js';
import { TollgateError } from '../domain/errors.js';
import type { Logger } from '../logger.js';
import { admitInFlight } from './in-flight.js';
import { authenticate } from './authenticate.js';
import { countTokens } from './count-tokens.js';
import type { PipelineDeps } from './deps.js';
import { estimate } from './estimate.js';
import { forward, forwardedUpstream } from './forward.js';
import { listModels } from './models.js';
import { relay } from './relay.js';

/** Every dialect's routes, the stored Responses' lifecycle routes and `/v1/models`. */
export function createProxyRoutes(deps: PipelineDeps, logger: Logger): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  for (const dialect of Object.values(DIALECTS)) routes.route('/', dialectRoutes(dialect, deps, logger));
  deps.responses?.mount(routes, deps);
  deps.batches?.mount(routes, deps);
  routes.get('/v1/models', (c) => listModels(c, deps));
  routes.get('/v1/models/:model{.+}', (c) => listModels(c, deps));
  return routes;
}

/** One dialect's routes: its billed `POST`, and its free token count when it has one. */
export function dialectRoutes(dialect: Dialect, deps: PipelineDeps, logger: Logger): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  if (dialect.upstreamKind !== 'openai') {
    // Refused before anything else when no upstream of its kind is configured (forwardedUpstream throws).
    routes.use(`${dialect.path}/*`, async function requireDialectUpstream(_c, next) {
      forwardedUpstream(dialect, deps);
      await next();
    });
  }
  routes.post(dialect.path, async function proxyRequest(c) {
    // Undefined when tracing is off: then each hook below is one check, and not even the closure is made.
    const trace = deps.tracing?.begin(c.get('requestId'), dialect.endpoint, (name) => c.req.header(name));
    try {
      const request = authenticate(c, dialect.endpoint, deps);
      const estimated = await estimate(request, deps);
      trace?.estimated(estimated);
      trace?.admitting();
      const admitted = await admitInFlight(estimated, deps);
      trace?.admitted(admitted);
      const response = await forward(admitted, deps);
      const answer = await relay(admitted, response, deps);
      trace?.returned();
      return answer;
    } catch (error) {
      trace?.failed(error);
      throw error;
    }
  });
  const countPath = dialect.countTokensPath;
  if (countPath !== undefined) routes.post(countPath, (c) => countTokens(c, dialect, deps));
  const render = dialect.renderError;
  if (render !== undefined) {
    // Its paths' other methods get a 405 in its own shape too (the app's 405s are OpenAI's).
    const paths = countPath === undefined ? [dialect.path] : [dialect.path, countPath];
    routes.on(['GET', 'PUT', 'PATCH', 'DELETE'], paths, (c) =>
      render(new TollgateError('method_not_allowed', `Method ${c.req.method} is not allowed on ${c.req.path}.`), c, logger),
    );
    routes.onError((error, c) => render(error, c, logger));
  }
  return routes;
}
