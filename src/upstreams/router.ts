/**
 * The upstreams Tollgate forwards to, built from the config: one connection
 * pool (pool.ts) and one breaker (breaker.ts) per upstream, and
 * {@link Router.route}, which names the upstreams that serve a model in the
 * order they are tried (routing.ts). Each upstream's `send` takes the path as
 * OpenAI's API names it below `/v1` (`/chat/completions`) and puts it in the
 * upstream's own URL shape — Azure deployment URLs, extra query parameters —
 * with the upstream's own auth headers.
 */
import { fromAnthropicHeaders } from './anthropic-upstream.js';
import { UpstreamBreaker } from './breaker.js';
import { createUpstream, type Upstream, type UpstreamRequest, type UpstreamResponse } from './pool.js';
import { candidatesFor, type Dialect, type RoutingTable } from './routing.js';
import { ReheadedAnswer } from './upstream-answer.js';
import type { UpstreamsConfig, UpstreamSpec } from './upstream-config.js';

interface RoutedUpstream {
  readonly name: string;
  readonly spec: UpstreamSpec;
  readonly breaker: UpstreamBreaker;
  /** Sends `request.path` (OpenAI's path below /v1, query included) to this upstream, for `model` as the upstream knows it. */
  send(request: UpstreamRequest, model?: string): Promise<UpstreamResponse>;
}

export interface RouteCandidate {
  readonly upstream: RoutedUpstream;
  /** The model name sent to this upstream (an alias's target, an Azure deployment). */
  readonly upstreamModel: string;
}

export interface Route {
  /** The public model name the client asked for. */
  readonly model: string;
  /** Upstreams to try, in order; never empty. */
  readonly candidates: readonly RouteCandidate[];
}

export interface Router {
  readonly upstreams: readonly RoutedUpstream[];
  /** The one upstream of TOLLGATE_UPSTREAM_URL (no upstreams list in the config). */
  readonly shorthand: boolean;
  readonly maxRetryAfterMs: number;
  readonly table: RoutingTable;
  /** The upstreams that serve `model` in `dialect`, in order; undefined when none does. */
  route(model: string, dialect?: Dialect): Route | undefined;
  byName(name: string): RoutedUpstream | undefined;
  close(): Promise<void>;
}

/** Builds the router; `client` replaces the shorthand upstream's pool (tests, the demo). */
export function createRouter(config: UpstreamsConfig, client?: Upstream): Router {
  const pools: Upstream[] = [];
  const upstreams = config.list.map((spec): RoutedUpstream => {
    const pool =
      client !== undefined && config.shorthand
        ? client
        : createUpstream({
            url: spec.url,
            apiKey: spec.apiKey,
            auth: spec.auth,
            headers: spec.headers,
            defaultHeaders: spec.defaultHeaders,
            connectTimeoutMs: spec.connectTimeoutMs,
            headersTimeoutMs: spec.headersTimeoutMs,
            idleTimeoutMs: spec.idleTimeoutMs,
            connections: spec.connections,
            maxShare: spec.maxShare,
            queueTimeoutMs: spec.queueTimeoutMs,
          });
    pools.push(pool);
    return {
      name: spec.name,
      spec,
      breaker: new UpstreamBreaker(config.breaker),
      send: async (request, model) => {
        const response = await pool.send({ ...request, path: upstreamPathFor(spec, request.path, model) });
        // Anthropic's account headers stay with the proxy, as on TOLLGATE_ANTHROPIC_URL's upstream.
        return spec.kind === 'anthropic' ? new ReheadedAnswer(response, fromAnthropicHeaders(response.headers, response.status)) : response;
      },
    };
  });
  const byName = new Map(upstreams.map((u) => [u.name, u]));
  const table: RoutingTable = { upstreams: config.list, routes: config.routes };
  return {
    upstreams,
    shorthand: config.shorthand,
    maxRetryAfterMs: config.maxRetryAfterMs,
    table,
    route(model, dialect = 'openai') {
      const candidates = candidatesFor(table, model, dialect).map((c) => ({ upstream: byName.get(c.upstream)!, upstreamModel: c.upstreamModel }));
      return candidates.length === 0 ? undefined : { model, candidates };
    },
    byName: (name) => byName.get(name),
    async close() {
      await Promise.all(pools.map((pool) => pool.close()));
    },
  };
}

/**
 * The path below an upstream's base URL for OpenAI's `path` (below /v1): Azure's
 * deployment URLs put the deployment in the path (`/deployments/{d}/chat/completions`),
 * except for the Responses API and model listings, which Azure serves beside them;
 * every upstream's configured query (`api-version`) is appended.
 */
export function upstreamPathFor(spec: Pick<UpstreamSpec, 'azureDeployments' | 'query'>, path: string, model: string | undefined): string {
  // Most upstreams: no deployment in the path, no query of their own, and none from the client.
  if (!spec.azureDeployments && !path.includes('?') && Object.keys(spec.query).length === 0) return path;
  const [bare, search = ''] = path.split('?', 2) as [string, string?];
  const params = new URLSearchParams(search);
  for (const [name, value] of Object.entries(spec.query)) params.set(name, value);
  const perDeployment = spec.azureDeployments && model !== undefined && !bare.startsWith('/responses') && !bare.startsWith('/models');
  const full = perDeployment ? `/deployments/${encodeURIComponent(model)}${bare}` : bare;
  const query = params.toString();
  return query === '' ? full : `${full}?${query}`;
}
