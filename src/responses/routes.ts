/**
 * The Responses API's lifecycle through the proxy: retrieve
 * (`GET /v1/responses/{id}`), cancel (`POST …/cancel`), delete (`DELETE …`)
 * and input items (`GET …/input_items`).
 *
 * - A key sees only the responses it created: any other id — unknown,
 *   deleted, or another key's, even of the same tenant — is the API's own
 *   404, answered without asking the upstream.
 * - Each call is one request of the key (its request limits apply) and costs
 *   no tokens; it is not written to the ledger, which holds billed requests.
 * - A retrieve or cancel that shows a background job finished settles it at
 *   once (src/responses/poller.ts).
 * - Streaming a response by GET (`stream=true`) is refused with a 400: the
 *   proxy relays a background job's stream only from its create call.
 * - The items an answer shows (output items, listed input items) become the
 *   key's, for its `item_reference`s (src/pipeline/ownership.ts).
 * - Upstream error answers are relayed with the provider account's
 *   identifiers masked, as on the proxy routes (src/upstreams/redact.ts).
 */
import type { Context, Hono } from 'hono';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import { toClientHeaders, toUpstreamHeaders } from '../http/headers.js';
import { authenticate } from '../pipeline/authenticate.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import { countRequest } from '../pipeline/count-request.js';
import { toUpstreamError } from '../upstreams/pool.js';
import { redactProviderAccount } from '../upstreams/redact.js';
import type { BackgroundPoller } from './poller.js';
import type { ResponseStore } from '../storage/sqlite/responses.js';
import { answerFacts, forwardedQuery, outputItemIds, parseResponseObject, responseNotFound, type LifecycleCall } from './wire.js';

interface LifecycleDeps {
  readonly store: ResponseStore;
  readonly poller: BackgroundPoller;
}

const METHODS: Readonly<Record<LifecycleCall, 'GET' | 'POST' | 'DELETE'>> = {
  retrieve: 'GET',
  cancel: 'POST',
  delete: 'DELETE',
  input_items: 'GET',
};

export function mountLifecycleRoutes(routes: Hono<AppEnv>, deps: PipelineDeps, lifecycle: LifecycleDeps): void {
  routes.get('/v1/responses/:id/input_items', (c) => lifecycleCall(c, 'input_items', deps, lifecycle));
  routes.post('/v1/responses/:id/cancel', (c) => lifecycleCall(c, 'cancel', deps, lifecycle));
  routes.get('/v1/responses/:id', (c) => lifecycleCall(c, 'retrieve', deps, lifecycle));
  routes.delete('/v1/responses/:id', (c) => lifecycleCall(c, 'delete', deps, lifecycle));
}

async function lifecycleCall(c: Context<AppEnv>, call: LifecycleCall, deps: PipelineDeps, lifecycle: LifecycleDeps): Promise<Response> {
  const request = authenticate(c, 'responses', deps);
  const id = c.req.param('id') ?? '';
  const limitHeaders = await countRequest(request, deps);
  if ((await lifecycle.store.findOwner(id)) !== request.caller.key.id) throw withHeaders(responseNotFound(id), limitHeaders);
  if (call === 'retrieve' && new URL(request.url).searchParams.get('stream') === 'true') {
    throw new TollgateError(
      'invalid_value',
      'Tollgate does not stream a response by GET; retrieve it without stream=true, or stream it from its create call.',
      { param: 'stream', headers: limitHeaders },
    );
  }
  const suffix = call === 'cancel' ? '/cancel' : call === 'input_items' ? '/input_items' : '';
  let response;
  try {
    response = await deps.upstream.send({
      method: METHODS[call],
      path: `/responses/${encodeURIComponent(id)}${suffix}${forwardedQuery(call, request.url)}`,
      headers: { ...toUpstreamHeaders(request.client.headers, false), 'x-client-request-id': request.requestId },
      signal: request.client.abort.signal,
    });
  } catch (error) {
    throw withHeaders(toUpstreamError(error), limitHeaders);
  }
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
  } catch (error) {
    throw withHeaders(toUpstreamError(error), limitHeaders);
  }
  const answer = Buffer.concat(chunks);
  const ok = response.status >= 200 && response.status < 300;
  if (ok && call === 'delete') lifecycle.store.markDeleted(id, deps.now());
  if (ok && (call === 'retrieve' || call === 'cancel')) {
    const body = parseResponseObject(answer);
    if (body !== undefined) {
      // Its items (and, once it is done, what continuing it bills) are the key's from now on.
      lifecycle.store.noteAnswer(id, answerFacts(body));
      lifecycle.poller.observe(id, body);
    }
  }
  // The input items a listing shows may be referred to (item_reference) by this key.
  if (ok && call === 'input_items') lifecycle.store.noteAnswer(id, { itemIds: outputItemIds(parseResponseObject(answer), 'data') });
  // Error answers name the proxy's provider account (organization, project): masked, as on the proxy routes.
  const body = ok ? answer : redactProviderAccount(answer);
  const headers = toClientHeaders(response.headers, request.requestId, false, response.status);
  if (body !== answer) delete headers['content-length'];
  return new Response(new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength), {
    status: response.status,
    headers: { ...headers, ...limitHeaders },
  });
}

function withHeaders(error: TollgateError, headers: Record<string, string>): TollgateError {
  return new TollgateError(error.code, error.message, { param: error.param, headers: { ...headers, ...error.headers }, cause: error.cause });
}
