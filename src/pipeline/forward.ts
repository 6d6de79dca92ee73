/**
 * Stage 4, forward: send the admitted request upstream with the proxy's own
 * provider key. The body goes as the client sent it, except that a stream
 * whose usage arrives only on request asks for it
 * (`stream_options.include_usage`; the relay withholds that chunk again).
 * When the upstream cannot be reached or the client leaves first, the
 * request is settled here and the client gets the error.
 */
import { TollgateError } from '../errors.js';
import { toUpstreamHeaders } from '../http/headers.js';
import type { Endpoint } from '../endpoints.js';
import { failedBeforeSending, toUpstreamError, type Upstream, type UpstreamResponse } from '../upstreams/pool.js';
import { needsUsageInjection, withUsageRequested } from '../upstreams/request-facts.js';
import type { AdmittedRequest } from './context.js';
import type { PipelineDeps } from './deps.js';
import { settleForwarded } from './settle.js';

/** Stage 4: the upstream's response (headers arrived; the body is still to come). */
export async function forward(request: AdmittedRequest, deps: PipelineDeps): Promise<UpstreamResponse> {
  const { client, endpoint, facts } = request;
  const body = needsUsageInjection(endpoint, facts) ? withUsageRequested(request.bytes, request.body) : request.bytes;
  request.sentAt = deps.now();
  if (client.abort.signal.aborted) return clientLeftFirst(request, deps);
  try {
    return await forwardedUpstream(endpoint, deps).send({
      method: 'POST',
      path: upstreamPath(request.url, endpoint === 'messages' ? MESSAGES_QUERY : []),
      headers: { ...toUpstreamHeaders(client.headers, true), 'x-client-request-id': request.requestId },
      body,
      signal: client.abort.signal,
      owner: request.caller.key.id,
    });
  } catch (error) {
    const clientGone = client.abort.signal.aborted;
    const failure = clientGone ? undefined : toUpstreamError(error);
    settleForwarded(
      request,
      {
        outcome: clientGone ? 'client_aborted' : failure?.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted',
        status: null,
        // A refused connection never reached the upstream: nothing to bill.
        accepted: clientGone || !failedBeforeSending(error),
        usage: undefined,
        streamedText: '',
        firstTokenAt: undefined,
        upstreamRequestId: undefined,
        errorCode: failure?.code ?? 'client_aborted',
      },
      deps,
    );
    throw failure ?? new TollgateError('client_closed_request', 'The client closed the request.');
  }
}

/** Query parameters Anthropic's Messages API defines (its SDKs' beta client sends `?beta=true`). */
export const MESSAGES_QUERY: readonly string[] = ['beta'];

/**
 * The upstream an endpoint's requests go to: Anthropic's Messages API to the Anthropic upstream
 * (src/anthropic/upstream.ts), everything else to the OpenAI-compatible one. The seam that
 * config-file routing by model (issue 14, part A) replaces.
 */
export function forwardedUpstream(endpoint: Endpoint, deps: Pick<PipelineDeps, 'upstream' | 'anthropic'>): Upstream {
  if (endpoint !== 'messages') return deps.upstream;
  if (deps.anthropic === undefined) throw new TollgateError('upstream_unreachable', 'No Anthropic upstream is configured for /v1/messages.');
  return deps.anthropic;
}

/** The client went away while the request was being admitted: it is never sent, and costs nothing. */
function clientLeftFirst(request: AdmittedRequest, deps: PipelineDeps): never {
  settleForwarded(
    request,
    {
      outcome: 'client_aborted',
      status: null,
      accepted: false,
      usage: undefined,
      streamedText: '',
      firstTokenAt: undefined,
      upstreamRequestId: undefined,
      errorCode: 'client_aborted',
    },
    deps,
  );
  throw new TollgateError('client_closed_request', 'The client closed the request.');
}

/**
 * The path below the upstream's base URL: the client's path without /v1,
 * with only the query parameters the upstream API defines for it. None of
 * the endpoints proxied today defines one, so a client's query (a limit's
 * weight parameter, anything else) stays with Tollgate; an endpoint that
 * defines some passes their names.
 */
export function upstreamPath(requestUrl: string, queryParameters: readonly string[] = []): string {
  const url = new URL(requestUrl);
  const path = url.pathname.slice(url.pathname.indexOf('/v1/') + '/v1'.length);
  if (queryParameters.length === 0 || url.search === '') return path;
  const kept = new URLSearchParams();
  for (const [name, value] of url.searchParams) if (queryParameters.includes(name)) kept.append(name, value);
  const query = kept.toString();
  return query === '' ? path : `${path}?${query}`;
}
