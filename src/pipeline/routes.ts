/**
 * The OpenAI-compatible routes. A billed request crosses the pipeline's
 * stages in order — each in its own module, see README "How it works":
 *
 *   authenticate → estimate → admit → forward → relay → settle
 *
 * Every request that passes authentication ends as exactly one ledger row —
 * except refusals past a key's allowance (TOLLGATE_REFUSAL_ROWS a minute),
 * which are only counted in the rollups (src/storage/sqlite/refusal-allowance.ts).
 */
import { Hono } from 'hono';
import type { AppEnv } from '../app-env.js';
import { ENDPOINTS, ENDPOINT_PATHS } from '../endpoints.js';
import { admitInFlight } from './in-flight.js';
import { authenticate } from './authenticate.js';
import type { PipelineDeps } from './deps.js';
import { estimate } from './estimate.js';
import { forward } from './forward.js';
import { listModels } from './models.js';
import { relay } from './relay.js';

export function createProxyRoutes(deps: PipelineDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  for (const endpoint of ENDPOINTS) {
    routes.post(ENDPOINT_PATHS[endpoint], async function proxyRequest(c) {
      const request = authenticate(c, endpoint, deps);
      const estimated = await estimate(request, deps);
      const admitted = await admitInFlight(estimated, deps);
      const response = await forward(admitted, deps);
      return relay(admitted, response, deps);
    });
  }
  deps.responses?.mount(routes, deps);
  routes.get('/v1/models', (c) => listModels(c, deps));
  routes.get('/v1/models/:model{.+}', (c) => listModels(c, deps));
  return routes;
}
