/**
 * A call that bills nothing (a lifecycle call: retrieve, cancel, list, a file
 * upload) is still one request of its key: it takes one request from every
 * bucket the key pays into, all or none, at no token or dollar cost; a
 * refusal is the usual 429.
 */
import { firstHeader, type HeaderRecord } from '../http/client-request.js';
import { bindingsFor, buildRateLimitHeaders, computeSettlement, createDemands } from '../limits/index.js';
import type { Caller } from '../domain/caller.js';
import type { PipelineDeps } from './deps.js';
import { limitRefusal } from './refusals.js';

/** Takes one request of `caller`; returns the rate-limit headers to send, or throws the 429. */
export async function countRequest(
  request: { readonly caller: Caller; readonly url: string; readonly client: { readonly headers: HeaderRecord } },
  deps: Pick<PipelineDeps, 'limiter' | 'globalLimits'>,
): Promise<Record<string, string>> {
  const bindings = bindingsFor(request.caller, deps.globalLimits);
  if (bindings.length === 0) return {};
  const demands = createDemands(bindings, {
    model: '',
    reservedTokens: 0,
    reservedMicroUsd: 0,
    headers: (name) => firstHeader(request.client.headers[name.toLowerCase()]),
    query: (name) => new URL(request.url).searchParams.get(name) ?? undefined,
  });
  const result = await deps.limiter.acquire(demands);
  if (!result.ok) throw limitRefusal(result, request.caller, bindings, demands);
  deps.limiter.settle(result.ticket, computeSettlement(bindings, demands, { model: '', tokens: 0, microUsd: 0 }));
  return buildRateLimitHeaders(result, request.caller.key.id);
}
