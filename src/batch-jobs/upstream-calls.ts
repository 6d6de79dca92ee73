/**
 * What the batch routes of both providers (openai-routes.ts,
 * anthropic-routes.ts) do alike around one upstream call: send the client's
 * call with its headers, read a small JSON answer whole, relay it (an error's
 * provider account masked), and settle at $0 the row of a batch the upstream
 * never took.
 */
import type { BudgetReservation } from '../budgets/shared-budgets.js';
import { TollgateError } from '../domain/errors.js';
import { toClientHeaders, toUpstreamHeaders } from '../http/headers.js';
import type { RequestContext } from '../pipeline/context.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import { toUpstreamError, type Upstream, type UpstreamResponse } from '../upstreams/pool.js';
import { redactProviderAccount } from '../upstreams/redact.js';

/** One call to the upstream on behalf of the client. */
export interface UpstreamCall {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Under the upstream's `/v1` (`/batches/…`, `/messages/batches/…`). */
  readonly path: string;
  readonly body?: Buffer;
}

/** Sends the client's call; a failure to reach the upstream is its TollgateError, with the rate-limit headers. */
export async function sendCall(
  request: RequestContext,
  upstream: Upstream,
  call: UpstreamCall,
  limitHeaders: Record<string, string>,
): Promise<UpstreamResponse> {
  try {
    return await upstream.send({
      method: call.method,
      path: call.path,
      headers: upstreamHeadersOf(request, call.body !== undefined),
      ...(call.body === undefined ? {} : { body: call.body }),
      signal: request.client.abort.signal,
      owner: request.caller.key.id,
    });
  } catch (error) {
    throw withHeaders(toUpstreamError(error), limitHeaders);
  }
}

/** The client's headers for the upstream (less what stays at the proxy), with its request id. */
export function upstreamHeadersOf(request: RequestContext, hasBody: boolean): Record<string, string> {
  return { ...toUpstreamHeaders(request.client.headers, hasBody), 'x-client-request-id': request.requestId };
}

/** A small JSON answer, whole (an error, a file or batch object). */
export async function readAnswer(response: UpstreamResponse, limitHeaders: Record<string, string>): Promise<Buffer> {
  try {
    return await response.whole();
  } catch (error) {
    throw withHeaders(toUpstreamError(error), limitHeaders);
  }
}

/** The answer for the client: the upstream's status and headers, its body (an error's provider account masked). */
export function relayAnswer(request: RequestContext, response: UpstreamResponse, answer: Buffer, limitHeaders: Record<string, string>): Response {
  // Error answers name the proxy's provider account: masked, as on the proxy routes.
  const body = ok(response) ? answer : redactProviderAccount(answer);
  const headers = toClientHeaders(response.headers, request.requestId, false, response.status);
  // The body may have been rewritten (masked, results_url): its length is the one sent.
  delete headers['content-length'];
  return new Response(new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength), {
    status: response.status,
    headers: { ...headers, ...limitHeaders },
  });
}

/** Runs `run`; a TollgateError it throws carries the rate-limit headers. */
export async function withLimitHeaders<T>(headers: Record<string, string>, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof TollgateError) throw withHeaders(error, headers);
    throw error;
  }
}

export function ok(response: UpstreamResponse): boolean {
  return response.status >= 200 && response.status < 300;
}

/** A string field of a JSON answer; undefined when absent or not JSON. */
export function stringField(answer: Buffer, field: string): string | undefined {
  try {
    const value = (JSON.parse(answer.toString('utf8')) as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Settles the batch's row at nothing: the upstream never took it. */
function nothingBilled(request: RequestContext, deps: PipelineDeps, errorCode: string): void {
  const completedAt = deps.now();
  deps.ledger.complete({
    requestId: request.requestId,
    completedAt,
    status: 'upstream_error',
    httpStatus: null,
    promptTokens: 0,
    cachedTokens: 0,
    completionTokens: 0,
    reasoningTokens: 0,
    serviceTier: 'batch',
    costMicros: 0,
    usageSource: 'none',
    latencyMs: completedAt - request.startedAt,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: errorCode.slice(0, 64),
  });
}

function withHeaders(error: TollgateError, headers: Record<string, string>): TollgateError {
  return new TollgateError(error.code, error.message, { param: error.param, headers: { ...headers, ...error.headers }, cause: error.cause });
}

/**
 * Creates an admitted batch upstream: its id, or none when the upstream refused it (or answered
 * what is no batch), in which case nothing runs and its row is settled at $0 and its Redis
 * reservation released; so is it when the upstream cannot be reached (thrown).
 */
export async function createUpstreamBatch(
  request: RequestContext,
  deps: PipelineDeps,
  upstream: Upstream,
  call: UpstreamCall,
  admitted: { readonly headers: Record<string, string>; readonly reservation: BudgetReservation | undefined },
): Promise<{ readonly response: UpstreamResponse; readonly answer: Buffer; readonly id: string | undefined }> {
  let response: UpstreamResponse;
  let answer: Buffer;
  try {
    response = await sendCall(request, upstream, call, admitted.headers);
    answer = await readAnswer(response, admitted.headers);
  } catch (error) {
    nothingBilled(request, deps, error instanceof TollgateError ? error.code : 'upstream_error');
    admitted.reservation?.release();
    throw error;
  }
  const id = ok(response) ? stringField(answer, 'id') : undefined;
  if (id === undefined) {
    nothingBilled(request, deps, `upstream_${response.status}`);
    admitted.reservation?.release();
  }
  return { response, answer, id };
}
