/**
 * A dialect's free token count (Anthropic's `POST /v1/messages/count_tokens`: the upstream counts a
 * Messages body's input tokens for free), passed to the upstream rather than estimated (Claude's
 * tokenizer is not public).
 * Not billed, but a request of its key like any other (as `GET /v1/models`, src/pipeline/models.ts):
 * the key's model allow-list applies, it takes from the `requests` limits, and it is one ledger
 * row with no cost, recorded before it is forwarded.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import type { Dialect } from '../dialects/index.js';
import { TollgateError } from '../domain/errors.js';
import { openBody } from '../estimate/index.js';
import { toClientHeaders, toUpstreamHeaders, withRequestIds } from '../http/headers.js';
import { checkModelAllowed } from '../domain/caller.js';
import { authenticate } from './authenticate.js';
import { chargeRefusal, chargeRequestLimits } from './charge-refusal.js';
import type { PipelineDeps } from './deps.js';
import { freeRequestRow } from './free-request.js';
import { forwardedUpstream, upstreamPath } from './forward.js';
import { AdmissionRefused } from './refusals.js';
import { asBody } from './relay.js';
import { toUpstreamError, type UpstreamResponse } from '../upstreams/pool.js';
import { redactProviderAccount } from '../upstreams/redact.js';
import type { RouteCandidate } from '../upstreams/router.js';

/** The ledger's endpoint name for these requests. */
const ENDPOINT = 'count_tokens';

export async function countTokens(c: Context<AppEnv>, dialect: Dialect, deps: PipelineDeps): Promise<Response> {
  const request = authenticate(c, dialect.endpoint, deps);
  const { caller, client, requestId, startedAt } = request;
  const row = freeRequestRow(deps, caller, requestId, startedAt, ENDPOINT);
  const refuse = (refusal: TollgateError, model: string): never => row.refuse(refusal, refusal instanceof AdmissionRefused ? refusal.reason : 'other', model);
  let model = '(unknown)';
  let bytes: Buffer;
  // Read and checked as any body (a large one on the estimate worker), but never estimated.
  const intake = deps.intake?.open(caller.key.id, client.left);
  try {
    const opened = await openBody(dialect.endpoint, await client.readBody(deps.maxBodyBytes, intake));
    opened.close();
    bytes = opened.bytes;
    model = opened.facts.model;
    checkModelAllowed(caller.policy, model);
  } catch (error) {
    const refusal = await chargeRefusal(
      request,
      error instanceof TollgateError ? error : new TollgateError('invalid_request', 'The request could not be read.'),
      deps,
    );
    return refuse(refusal, model);
  } finally {
    intake?.release();
  }
  const limited = await chargeRequestLimits(request, deps);
  if (limited !== undefined) return refuse(limited, model);

  await row.record(model);
  const { settle } = row;
  let response;
  let answer: Buffer;
  try {
    const send = {
      method: 'POST' as const,
      path: upstreamPath(request.url, dialect.upstreamQuery),
      headers: withRequestIds(toUpstreamHeaders(client.headers, true), requestId),
      body: bytes,
      signal: client.abort.signal,
      owner: caller.key.id,
    };
    // The model's configured upstreams of the dialect in order, past any that cannot answer now (as
    // forward.ts does, without breakers: counting is free), else TOLLGATE_ANTHROPIC_URL.
    const candidates = deps.router?.route(model, dialect.upstreamKind)?.candidates ?? [];
    if (candidates.length === 0) response = await forwardedUpstream(dialect, deps).send(send);
    else response = await firstAnswer(candidates, send);
    answer = await response.whole();
  } catch (error) {
    settle(null, client.left.aborted ? 'client_aborted' : 'upstream_interrupted', undefined);
    throw toUpstreamError(error);
  }
  const upstreamId = response.headers['x-request-id'];
  settle(response.status, response.status < 400 ? 'ok' : 'upstream_error', typeof upstreamId === 'string' ? upstreamId : undefined);
  if (response.status >= 400) answer = redactProviderAccount(answer);
  const headers = toClientHeaders(response.headers, requestId, false, response.status);
  delete headers['content-length'];
  return new Response(asBody(answer), { status: response.status, headers });
}

/** The first answer of the candidates that is not a failure to try past (connect error, 429, 5xx); the last one's whatever it is. */
async function firstAnswer(candidates: readonly RouteCandidate[], send: Parameters<RouteCandidate['upstream']['send']>[0]): Promise<UpstreamResponse> {
  for (let i = 0; ; i += 1) {
    const { upstream, upstreamModel } = candidates[i]!;
    const last = i === candidates.length - 1;
    let response: UpstreamResponse;
    try {
      response = await upstream.send(send, upstreamModel);
    } catch (error) {
      if (last || send.signal.aborted) throw error;
      continue;
    }
    if (last || (response.status !== 429 && response.status < 500)) return response;
    response.body.once('error', () => undefined);
    response.body.destroy();
  }
}
