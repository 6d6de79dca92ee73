/**
 * The OpenAI-compatible routes: read and check the body, forward it with the
 * proxy's key, and relay the answer — JSON whole, SSE chunk by chunk as it
 * arrives — while noting usage for the ledger.
 */
import { Hono, type Context } from 'hono';
import type { Readable } from 'node:stream';
import { TollgateError, type ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { parseJsonObject } from './body.js';
import { clientRequestOf, type ClientRequest } from './client-request.js';
import { isEventStream, toClientHeaders, toUpstreamHeaders } from './headers.js';
import { needsUsageInjection, readRequestFacts, withUsageRequested } from './request-body.js';
import { SseTap } from './sse.js';
import { toUpstreamError, type Upstream, type UpstreamResponse } from './upstream.js';
import { usageFromJsonBytes, type Endpoint, type Usage } from './usage.js';
import type { AppEnv } from '../app.js';

export interface ProxyDeps {
  readonly upstream: Upstream;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly now?: () => number;
}

/** How a proxied request ended, as the ledger will record it. */
export type Outcome = 'ok' | 'upstream_error' | 'client_aborted' | 'upstream_interrupted' | 'upstream_timeout';

export interface Ending {
  readonly outcome: Outcome;
  readonly status: number;
  readonly usage: Usage | undefined;
  /** Completion text streamed before an early end (to charge what was generated). */
  readonly streamedText: string;
  readonly firstTokenAt: number | undefined;
  readonly upstreamRequestId: string | undefined;
  readonly errorCode: string | undefined;
}

const ENDPOINT_PATHS: ReadonlyArray<readonly [string, Endpoint]> = [
  ['/v1/chat/completions', 'chat'],
  ['/v1/completions', 'completions'],
  ['/v1/embeddings', 'embeddings'],
  ['/v1/responses', 'responses'],
];

/** Builds the /v1 routes. */
export function createProxyRoutes(deps: ProxyDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  const now = deps.now ?? Date.now;

  for (const [path, endpoint] of ENDPOINT_PATHS) {
    routes.post(path, (c) => proxyPost(c, endpoint));
  }
  routes.get('/v1/models', (c) => proxyGet(c));
  routes.get('/v1/models/:model{.+}', (c) => proxyGet(c));

  async function proxyGet(c: Context<AppEnv>): Promise<Response> {
    const requestId = c.get('requestId');
    const client = clientRequestOf(c.req.raw, c.env);
    const abort = client.abort;
    const response = await deps.upstream.send({
      method: 'GET',
      path: upstreamPath(c.req.url),
      headers: toUpstreamHeaders(client.headers, false),
      signal: abort.signal,
    });
    const bytes = await readAll(response.body);
    return new Response(asBody(bytes), { status: response.status, headers: toClientHeaders(response.headers, requestId, false) });
  }

  async function proxyPost(c: Context<AppEnv>, endpoint: Endpoint): Promise<Response> {
    const requestId = c.get('requestId');
    const startedAt = now();
    const client: ClientRequest = clientRequestOf(c.req.raw, c.env);
    const bytes = await client.readBody(deps.maxBodyBytes);
    const body = parseJsonObject(bytes);
    const facts = readRequestFacts(endpoint, body);
    const injectUsage = needsUsageInjection(endpoint, facts);
    const upstreamBody = injectUsage ? withUsageRequested(bytes, body) : bytes;
    const abort = client.abort;

    const log = deps.logger.child({ requestId, endpoint, model: facts.model, stream: facts.stream });
    const finish = (ending: Ending): void => {
      const latencyMs = now() - startedAt;
      log.info(
        {
          outcome: ending.outcome,
          status: ending.status,
          latencyMs,
          ttftMs: ending.firstTokenAt === undefined ? undefined : ending.firstTokenAt - startedAt,
          promptTokens: ending.usage?.promptTokens,
          completionTokens: ending.usage?.completionTokens,
          upstreamRequestId: ending.upstreamRequestId,
          errorCode: ending.errorCode,
        },
        'request',
      );
    };

    let response: UpstreamResponse;
    try {
      response = await deps.upstream.send({
        method: 'POST',
        path: upstreamPath(c.req.url),
        headers: toUpstreamHeaders(client.headers, true),
        body: upstreamBody,
        signal: abort.signal,
      });
    } catch (error) {
      const failure = abort.signal.aborted ? undefined : toUpstreamError(error);
      finish({
        outcome: failure === undefined ? 'client_aborted' : failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_error',
        status: failure?.status ?? 499,
        usage: undefined,
        streamedText: '',
        firstTokenAt: undefined,
        upstreamRequestId: undefined,
        errorCode: failure?.code ?? 'client_aborted',
      });
      throw failure ?? new TollgateError('client_closed_request', 'The client closed the request.');
    }

    const upstreamRequestId = headerValue(response.headers['x-request-id']);
    if (isEventStream(response.headers)) {
      const tap = new SseTap({ endpoint, stripUsageChunk: injectUsage, now });
      const stream = relayStream(response, tap, endpoint, abort, (outcome, errorCode) =>
        finish({
          outcome,
          status: response.status,
          usage: tap.usage,
          streamedText: outcome === 'ok' ? '' : tap.completionText(),
          firstTokenAt: tap.firstTokenTime,
          upstreamRequestId,
          errorCode,
        }),
      );
      return new Response(stream, { status: response.status, headers: toClientHeaders(response.headers, requestId, true) });
    }

    let answer: Buffer;
    try {
      answer = await readAll(response.body);
    } catch (error) {
      const failure = toUpstreamError(error);
      const aborted = abort.signal.aborted;
      finish({
        outcome: aborted ? 'client_aborted' : failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted',
        status: response.status,
        usage: undefined,
        streamedText: '',
        firstTokenAt: undefined,
        upstreamRequestId,
        errorCode: aborted ? 'client_aborted' : failure.code,
      });
      throw failure;
    }
    const ok = response.status >= 200 && response.status < 300;
    finish({
      outcome: ok ? 'ok' : 'upstream_error',
      status: response.status,
      usage: ok ? usageFromJsonBytes(answer) : undefined,
      streamedText: '',
      firstTokenAt: undefined,
      upstreamRequestId,
      errorCode: ok ? undefined : upstreamErrorCode(answer),
    });
    return new Response(asBody(answer), { status: response.status, headers: toClientHeaders(response.headers, requestId, false) });
  }

  return routes;
}

/**
 * Relays an upstream SSE body to the client chunk by chunk. Calls `onEnd`
 * exactly once, however the stream ends: finished, upstream broke or went
 * silent (the client gets an error event, then a clean end), or the client
 * went away (the upstream request is aborted).
 */
function relayStream(
  response: UpstreamResponse,
  tap: SseTap,
  endpoint: Endpoint,
  abort: AbortController,
  onEnd: (outcome: Outcome, errorCode: string | undefined) => void,
): ReadableStream<Uint8Array> {
  const chunks = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let ended = false;
  const end = (outcome: Outcome, errorCode: string | undefined): void => {
    if (ended) return;
    ended = true;
    onEnd(outcome, errorCode);
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          let step: IteratorResult<Buffer>;
          try {
            step = await chunks.next();
          } catch (error) {
            if (abort.signal.aborted) return; // cancel() already accounted for it
            const failure = toUpstreamError(error);
            const tail = tap.finish();
            if (tail !== null) controller.enqueue(tail);
            const code: ErrorCode = failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_bad_response';
            controller.enqueue(streamErrorEvent(endpoint, code, 'The upstream stream was interrupted before it finished.'));
            controller.close();
            end(failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted', 'upstream_stream_interrupted');
            return;
          }
          if (step.done) {
            const tail = tap.finish();
            if (tail !== null) controller.enqueue(tail);
            controller.close();
            if (tap.error !== undefined) end('upstream_error', tap.error.code ?? 'upstream_stream_error');
            else if (tap.finished) end('ok', undefined);
            else end('upstream_interrupted', 'upstream_stream_truncated');
            return;
          }
          const forward = tap.push(step.value);
          if (forward !== null) {
            controller.enqueue(forward);
            return;
          }
        }
      },
      cancel() {
        abort.abort();
        response.body.destroy();
        end('client_aborted', 'client_aborted');
      },
    },
    { highWaterMark: 0 },
  );
}

/** An error event in the stream's own dialect, so the client's SDK raises an APIError. */
function streamErrorEvent(endpoint: Endpoint, code: ErrorCode, message: string): Uint8Array {
  const error = { message, type: 'upstream_error', param: null, code };
  const text =
    endpoint === 'responses'
      ? `event: error\ndata: ${JSON.stringify({ type: 'error', code, message, param: null })}\n\n`
      : `data: ${JSON.stringify({ error })}\n\n`;
  return Buffer.from(text);
}

/** The path below the upstream's base URL: the client's path without /v1, query kept. */
function upstreamPath(requestUrl: string): string {
  const start = requestUrl.indexOf('/v1/', requestUrl.indexOf('//') + 2);
  return requestUrl.slice(start + '/v1'.length);
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** A Buffer viewed as the Uint8Array a Response body takes (no copy). */
function asBody(bytes: Buffer): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
}

function upstreamErrorCode(bytes: Buffer): string {
  try {
    const code = (JSON.parse(bytes.toString('utf8')) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : 'upstream_error';
  } catch {
    return 'upstream_error';
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
