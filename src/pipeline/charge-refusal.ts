/**
 * A request refused before admission (400 bad body, 403 model not allowed)
 * still counts against the request limits of its key, tenant and the global
 * ones: otherwise refusals, which cost a ledger count and a log line each,
 * are the one thing a key can send without limit. When those
 * limits are used up the client gets the same 429 an admitted request would.
 * Only `requests` limits are charged: a refused request has no tokens or
 * cost to charge.
 */
import type { TollgateError } from '../domain/errors.js';
import { bindingsFor } from '../limits/index.js';
import { createDemands } from '../limits/index.js';
import type { RequestContext } from './context.js';
import type { PipelineDeps } from './deps.js';
import { limitRefusal, type AdmissionRefused } from './refusals.js';

/** The refusal the client gets: the original, or the limiter's 429 when the request limits are used up. */
export async function chargeRefusal(
  request: Pick<RequestContext, 'caller' | 'client' | 'url'>,
  refusal: TollgateError,
  deps: Pick<PipelineDeps, 'limiter' | 'globalLimits'>,
): Promise<TollgateError | AdmissionRefused> {
  // Our own failures (5xx) are not the client's to pay for.
  if (refusal.status >= 500) return refusal;
  return (await chargeRequestLimits(request, deps)) ?? refusal;
}

/**
 * Takes one request (or its header/query weight) from every `requests` limit
 * of the caller's key, tenant and the global ones, for good (a request's cost
 * is final when taken). Undefined when taken or nothing can be charged; the
 * 429 when a limit is used up. Also how `GET /v1/models` counts (models.ts).
 */
export async function chargeRequestLimits(
  request: Pick<RequestContext, 'caller' | 'client' | 'url'>,
  deps: Pick<PipelineDeps, 'limiter' | 'globalLimits'>,
): Promise<AdmissionRefused | undefined> {
  const bindings = bindingsFor(request.caller, deps.globalLimits).filter((binding) => binding.limit.unit === 'requests');
  if (bindings.length === 0) return undefined;
  const headers = request.client.headers;
  let query: URLSearchParams | undefined;
  const demands = createDemands(bindings, {
    model: '',
    reservedTokens: 0,
    reservedMicroUsd: 0,
    headers: (name) => {
      const value = headers[name.toLowerCase()];
      return Array.isArray(value) ? value[0] : value;
    },
    query: (name) => (query ??= new URL(request.url).searchParams).get(name) ?? undefined,
  });
  try {
    const result = await deps.limiter.acquire(demands);
    if (result.ok) {
      // A request's cost is final when taken (nothing to refund).
      deps.limiter.settle(
        result.ticket,
        demands.map((demand) => demand.cost),
      );
      return undefined;
    }
    return result.reason === 'rate_limited' ? limitRefusal(result, request.caller, bindings, demands) : undefined;
  } catch {
    // The limiter failing must not turn a clear 4xx (or a model list) into something else.
    return undefined;
  }
}
