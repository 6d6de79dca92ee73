/**
 * Anthropic's Messages API, served natively: `POST /v1/messages` (JSON and SSE) crosses the same
 * stages as the OpenAI routes (src/pipeline/routes.ts) — authenticate → estimate → admit →
 * forward → relay → settle — with the endpoint `messages` selecting the dialect where one
 * differs (counting, usage, stream events, the cut). `POST /v1/messages/count_tokens` is passed
 * to the upstream (count-tokens.ts). Errors Tollgate itself answers here are in Anthropic's
 * shape (errors.ts); the upstream's own answers pass through as they came.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import type { Logger } from '../logger.js';
import { authenticate } from '../pipeline/authenticate.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import { estimate } from '../pipeline/estimate.js';
import { forward } from '../pipeline/forward.js';
import { admitInFlight } from '../pipeline/in-flight.js';
import { relay } from '../pipeline/relay.js';
import { countTokens } from './count-tokens.js';
import { renderAnthropicError } from './errors.js';

/** Paths served here (other methods get a 405 in Anthropic's shape). */
const MESSAGES_PATHS = ['/v1/messages', '/v1/messages/count_tokens'] as const;

export function createMessagesRoutes(deps: PipelineDeps, logger: Logger): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.use('/v1/messages/*', async function requireAnthropicUpstream(_c, next) {
    if (deps.anthropic === undefined) throw new TollgateError('upstream_unreachable', 'No Anthropic upstream is configured for /v1/messages.');
    await next();
  });
  routes.post('/v1/messages', async function proxyMessages(c) {
    const request = authenticate(c, 'messages', deps);
    const estimated = await estimate(request, deps);
    const admitted = await admitInFlight(estimated, deps);
    const response = await forward(admitted, deps);
    return relay(admitted, response, deps);
  });
  routes.post('/v1/messages/count_tokens', (c) => countTokens(c, deps));
  routes.on(['GET', 'PUT', 'PATCH', 'DELETE'], [...MESSAGES_PATHS], (c) =>
    renderAnthropicError(new TollgateError('method_not_allowed', `Method ${c.req.method} is not allowed on ${c.req.path}.`), c, logger),
  );
  routes.onError((error, c) => renderAnthropicError(error, c, logger));
  return routes;
}
