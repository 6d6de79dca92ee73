/**
 * Stage 4, forward: send the admitted request upstream with the proxy's own
 * provider key. The body goes as the client sent it, except that a stream
 * whose usage arrives only on request asks for it
 * (`stream_options.include_usage`; the relay withholds that chunk again), and
 * a model an upstream knows by another name (an alias, an Azure deployment)
 * is renamed for it.
 *
 * The request's route lists the upstreams that may answer, in order. Before
 * anything reaches the client, a connect error, a timeout, a 429 or a 5xx
 * sends it on to the next one (an upstream whose breaker is open, or whose
 * Retry-After has not passed, is skipped); the last one's answer, whatever it
 * is, goes to the client. Once the answer's headers are taken, there is no
 * going back: the relay owns the body. Every attempt is noted on the request
 * (`answered`) for the ledger and the metrics. When no upstream answers or
 * the client leaves first, the request is settled here and the client gets
 * the error.
 *
 * The upstream request is not tied to the client's connection: a client that
 * leaves before the request is sent (or while it waits for a connection) means
 * it is never sent and costs nothing; one that leaves later does not abort it
 * — the headers are awaited as usual and the relay reads the answer on until
 * its usage. Only Tollgate aborts an upstream request (`upstreamAbort`: a cost
 * cap, a shutdown). Anthropic's Messages API is routed the same way among the
 * config's `anthropic` upstreams; without any, it goes to the one Anthropic
 * upstream of TOLLGATE_ANTHROPIC_URL (src/upstreams/anthropic-upstream.ts).
 */
import { dialectOf, type Dialect } from '../dialects/index.js';
import { TollgateError } from '../domain/errors.js';
import { toUpstreamHeaders, withRequestIds } from '../http/headers.js';
import { retryAfterMs } from '../upstreams/breaker.js';
import { failedBeforeSending, toUpstreamError, type Upstream, type UpstreamResponse } from '../upstreams/pool.js';
import { forwardedBody } from '../dialects/request-edits.js';
import { answerPrice } from '../upstreams/route-prices.js';
import type { RouteCandidate } from '../upstreams/router.js';
import type { AdmittedRequest, Attempt } from './context.js';
import type { PipelineDeps } from './deps.js';
import { settleForwarded, stopForwarded } from './settle.js';
import type { UpstreamAttempt } from './trace-hooks.js';

/** Stage 4: the upstream's response (headers arrived; the body is still to come). */
export async function forward(request: AdmittedRequest, deps: PipelineDeps): Promise<UpstreamResponse> {
  const { client, upstreamAbort } = request;
  request.sentAt = deps.now();
  if (client.left.aborted) return clientLeftFirst(request, deps);
  // Until it is settled, a shutdown stops it (open-requests.ts).
  deps.open?.track(request, () => stopForwarded(request, {}, deps));
  const dialect = dialectOf(request.endpoint);
  const candidates = request.route?.candidates ?? [];
  const attempts: Attempt[] = [];
  let failed: unknown;
  let tried: RouteCandidate | undefined;
  for (let i = 0; i < candidates.length || (i === 0 && candidates.length === 0); i += 1) {
    // A client that left (or a shutdown) while an upstream failed is not sent to the next one.
    if (i > 0 && (client.left.aborted || upstreamAbort.aborted)) break;
    const candidate = candidates[i];
    const last = i >= candidates.length - 1;
    // The last candidate is always tried: an answer, even an error, beats none.
    if (candidate !== undefined && !last && !candidate.upstream.breaker.tryAcquire(deps.now())) {
      attempts.push({ upstream: candidate.upstream.name, outcome: 'skipped', billed: false });
      continue;
    }
    tried = candidate;
    const send = {
      method: 'POST' as const,
      path: upstreamPath(request.url, dialect.upstreamQuery),
      headers: withRequestIds(toUpstreamHeaders(client.headers, true), request.requestId),
      body: bodyFor(dialect, request, candidate?.upstreamModel ?? request.facts.model),
      signal: upstreamAbort,
      // Waiting for a connection ends when the client leaves: nothing was sent yet.
      queueSignal: client.left,
      owner: request.caller.key.id,
    };
    // Its own span when tracing is on, whose traceparent the upstream gets (src/tracing).
    const traced = deps.tracing?.attempt(request.requestId, attemptOf(request, candidate, i), send.headers);
    let response: UpstreamResponse;
    try {
      response = candidate === undefined ? await forwardedUpstream(dialect, deps).send(send) : await candidate.upstream.send(send, candidate.upstreamModel);
    } catch (error) {
      failed = error;
      const name = candidate?.upstream.name;
      const sent = !failedBeforeSending(error);
      // The client left while it waited for a connection, or Tollgate stopped it: not the upstream's fault.
      if ((!sent && client.left.aborted) || upstreamAbort.aborted) {
        candidate?.upstream.breaker.release();
        if (name !== undefined) attempts.push({ upstream: name, outcome: 'client_aborted', billed: sent });
        traced?.ended(undefined, 'client_aborted');
        break;
      }
      candidate?.upstream.breaker.recordFailure(deps.now());
      const outcome = toUpstreamError(error).code === 'upstream_timeout' ? 'timeout' : 'connect_error';
      if (name !== undefined) attempts.push({ upstream: name, outcome, billed: !failedBeforeSending(error) });
      traced?.ended(undefined, outcome);
      continue;
    }
    failed = undefined;
    const { status } = response;
    const failing = status === 429 || status >= 500;
    if (candidate === undefined) {
      traced?.ended(status, status < 400 ? 'ok' : 'error');
      return response;
    }
    const { upstream } = candidate;
    if (failing) upstream.breaker.recordFailure(deps.now(), retryAfterMs(response.headers, deps.now(), deps.router?.maxRetryAfterMs ?? 0));
    else upstream.breaker.recordSuccess();
    const billed = status >= 500 && upstream.spec.billsErrors;
    const outcome = status < 400 ? 'ok' : status === 429 ? 'rate_limited' : status >= 500 ? 'server_error' : 'client_error';
    attempts.push({ upstream: upstream.name, outcome, billed });
    traced?.ended(status, outcome);
    if (failing && !last) {
      // Nothing of this answer reached the client: drop it (undici reports the destroy as an error) and try the next upstream.
      response.body.once('error', () => undefined);
      response.body.destroy();
      continue;
    }
    noteAnswer(request, candidate, attempts);
    return response;
  }
  if (tried !== undefined) noteAnswer(request, tried, attempts);
  if (upstreamAbort.aborted) {
    // Stopped by Tollgate (a shutdown), which settled it.
    stopForwarded(request, {}, deps);
    throw new TollgateError('upstream_unreachable', 'The request was stopped: Tollgate is shutting down.');
  }
  const clientGone = client.left.aborted;
  const failure = clientGone ? undefined : toUpstreamError(failed);
  settleForwarded(
    request,
    {
      outcome: clientGone ? 'client_aborted' : failure?.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted',
      status: null,
      // Sent and then lost (a timeout, a reset): the upstream may be generating, so it is billed
      // its reservation. A refused connection, or an upstream that answered with an error before
      // the client left, bills nothing.
      accepted: failed !== undefined && !failedBeforeSending(failed),
      usage: undefined,
      complete: false,
      streamedText: '',
      firstTokenAt: undefined,
      upstreamRequestId: undefined,
      errorCode: failure?.code ?? 'client_aborted',
    },
    deps,
  );
  throw failure ?? new TollgateError('client_closed_request', 'The client closed the request.');
}

/**
 * The upstream of a request no route names: Anthropic's Messages API to the
 * Anthropic upstream of TOLLGATE_ANTHROPIC_URL, everything else to the one
 * upstream (tests that build deps by hand).
 */
export function forwardedUpstream(dialect: Dialect, deps: Pick<PipelineDeps, 'upstream' | 'anthropic'>): Upstream {
  if (dialect.upstreamKind === 'openai') return deps.upstream;
  if (deps.anthropic === undefined) throw new TollgateError('upstream_unreachable', `No Anthropic upstream is configured for ${dialect.path}.`);
  return deps.anthropic;
}

/** The body for an upstream that knows the model as `upstreamModel`: the client's bytes with Tollgate's changes spliced in. */
function bodyFor(dialect: Dialect, request: AdmittedRequest, upstreamModel: string): Buffer {
  return forwardedBody(dialect, request, upstreamModel);
}

/** What a tracer is told of the `index`th try (src/pipeline/trace-hooks.ts). */
function attemptOf(request: AdmittedRequest, candidate: RouteCandidate | undefined, index: number): UpstreamAttempt {
  return {
    upstream: candidate?.upstream.name,
    kind: candidate?.upstream.spec.kind,
    url: candidate?.upstream.spec.url,
    model: candidate?.upstreamModel ?? request.facts.model,
    number: index + 1,
  };
}

/** Notes who answered (or was tried last). A model no table prices stays at the price it was reserved at. */
function noteAnswer(request: AdmittedRequest, candidate: RouteCandidate, attempts: readonly Attempt[]): void {
  const known = request.route !== undefined && request.estimate.price.known;
  request.answered = {
    upstream: candidate.upstream.name,
    price: known ? answerPrice(request.route!, candidate.upstream.name, false) : undefined,
    usageCost: candidate.upstream.spec.usageCost,
    attempts,
  };
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

const PLAIN_PATH = /^[A-Za-z0-9/_-]*$/;

/**
 * The path below the upstream's base URL: the client's path without /v1,
 * with only the query parameters the upstream API defines for it. None of
 * the endpoints proxied today defines one, so a client's query (a limit's
 * weight parameter, anything else) stays with Tollgate; an endpoint that
 * defines some passes their names.
 */
export function upstreamPath(requestUrl: string, queryParameters: readonly string[] = []): string {
  // A path of letters, digits, `/`, `_` and `-` alone is its own pathname: no query, nothing to
  // percent-encode, no dot segment. Parsing it as a URL cost about 0.75 µs a request.
  const scheme = requestUrl.indexOf('://');
  const start = scheme === -1 ? -1 : requestUrl.indexOf('/', scheme + 3);
  const pathname = start === -1 ? '' : requestUrl.slice(start);
  if (start !== -1 && PLAIN_PATH.test(pathname)) return pathname.slice(pathname.indexOf('/v1/') + '/v1'.length);
  const url = new URL(requestUrl);
  const path = url.pathname.slice(url.pathname.indexOf('/v1/') + '/v1'.length);
  if (queryParameters.length === 0 || url.search === '') return path;
  const kept = new URLSearchParams();
  for (const [name, value] of url.searchParams) if (queryParameters.includes(name)) kept.append(name, value);
  const query = kept.toString();
  return query === '' ? path : `${path}?${query}`;
}
