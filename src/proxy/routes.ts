/**
 * The OpenAI-compatible routes and the request path:
 *
 *   auth → body → estimate → ledger (pending, committed) → upstream → relay → settle → ledger
 *
 * JSON answers are relayed whole, SSE chunk by chunk as it arrives. Every
 * request that passed auth ends as exactly one ledger row.
 */
import { Hono, type Context } from 'hono';
import type { Readable } from 'node:stream';
import { TollgateError, type ErrorCode } from '../errors.js';
import { countCompletionTokens, estimateRequest, EstimateInputError, type Estimate, type EstimateOptions } from '../estimate/index.js';
import { authenticate, checkModelAllowed, type Caller } from '../keys/auth.js';
import type { KeyCache } from '../keys/cache.js';
import type { Completion, FinalStatus, LedgerWriter, RejectionReason } from '../ledger/writer.js';
import type { Logger } from '../logger.js';
import { parseJsonObject } from './body.js';
import { clientRequestOf, type ClientRequest } from './client-request.js';
import { isEventStream, toClientHeaders, toUpstreamHeaders } from './headers.js';
import { needsUsageInjection, readRequestFacts, withUsageRequested, type RequestFacts } from './request-body.js';
import { settle } from './settle.js';
import { SseTap } from './sse.js';
import { relayStream } from './relay.js';
import { failedBeforeSending, toUpstreamError, type Upstream, type UpstreamResponse } from './upstream.js';
import { completionTextOfJson, usageFromJsonBytes, type Endpoint, type Usage } from './usage.js';
import type { AppEnv } from '../app-env.js';
import type { Metrics } from '../metrics.js';
import { acquireLimits, AdmissionRefused, type Admission, type AdmissionDeps } from './admission.js';

export interface ProxyDeps {
  readonly upstream: Upstream;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly keys: KeyCache;
  readonly ledger: LedgerWriter;
  readonly estimate: EstimateOptions;
  readonly metrics: Metrics;
  readonly admission: AdmissionDeps;
  readonly now?: () => number;
}

/** How a proxied request ended, as the ledger records it. */
export type Outcome = FinalStatus;

interface Ending {
  readonly outcome: Outcome;
  readonly status: number | null;
  /** The upstream took the request (answered 2xx, or was still working when it ended). */
  readonly accepted: boolean;
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
  routes.get('/v1/models', (c) => proxyModels(c));
  routes.get('/v1/models/:model{.+}', (c) => proxyModels(c));

  /** Model listing: authenticated, not billed, filtered to the models the key may use. */
  async function proxyModels(c: Context<AppEnv>): Promise<Response> {
    const requestId = c.get('requestId');
    const client = clientRequestOf(c.req.raw, c.env);
    const caller = authenticate(client.headers, deps.keys, now());
    const single = c.req.param('model');
    if (single !== undefined) checkModelAllowed(caller.policy, single);
    const response = await deps.upstream.send({
      method: 'GET',
      path: upstreamPath(c.req.url),
      headers: { ...toUpstreamHeaders(client.headers, false), 'x-client-request-id': requestId },
      signal: client.abort.signal,
    });
    let bytes = await readAll(response.body);
    if (single === undefined && caller.policy.models !== undefined && response.status === 200) {
      bytes = filterModelList(bytes, caller);
    }
    const headers = toClientHeaders(response.headers, requestId, false, response.status);
    delete headers['content-length'];
    return new Response(asBody(bytes), { status: response.status, headers });
  }

  async function proxyPost(c: Context<AppEnv>, endpoint: Endpoint): Promise<Response> {
    const requestId = c.get('requestId');
    const startedAt = now();
    const client: ClientRequest = clientRequestOf(c.req.raw, c.env);
    const caller = authenticate(client.headers, deps.keys, startedAt);

    // Anything refused from here on is the caller's, and goes in the ledger.
    const recordRefusal = (
      refusal: TollgateError,
      row: { model: string; stream: boolean; status: 'rejected' | 'invalid_request'; reason: RejectionReason; estimate?: Estimate | undefined },
    ): void => {
      deps.metrics.rejections.inc({ key: deps.metrics.keyLabel(caller.key), reason: refusal.code });
      deps.ledger.reject({
        requestId,
        keyId: caller.key.id,
        tenantId: caller.key.tenantId,
        createdAt: startedAt,
        endpoint,
        model: row.model,
        stream: row.stream,
        status: row.status,
        httpStatus: refusal.status,
        errorCode: refusal.code,
        reason: row.reason,
        estPromptTokens: row.estimate?.promptTokens ?? 0,
        estCompletionTokens: row.estimate?.completionTokensReserved ?? 0,
        estCostMicros: row.estimate?.reservedMicroUsd ?? 0,
      });
    };
    let facts: RequestFacts | undefined;
    let estimate: Estimate | undefined;
    let body: Record<string, unknown>;
    let bytes: Buffer;
    try {
      bytes = await client.readBody(deps.maxBodyBytes);
      body = parseJsonObject(bytes);
      facts = readRequestFacts(endpoint, body);
      checkModelAllowed(caller.policy, facts.model);
      estimate = await estimateRequest(endpoint, body, deps.estimate);
    } catch (error) {
      const refusal = asRefusal(error);
      recordRefusal(refusal, {
        model: facts?.model ?? modelOf(error),
        stream: facts?.stream ?? false,
        status: refusal.code === 'model_not_allowed' ? 'rejected' : 'invalid_request',
        reason: 'other',
      });
      throw refusal;
    }

    const injectUsage = needsUsageInjection(endpoint, facts);
    const upstreamBody = injectUsage ? withUsageRequested(bytes, body) : bytes;
    const model = facts.model;
    const price = estimate.price;
    const refuse = (refusal: AdmissionRefused): never => {
      recordRefusal(refusal, { model, stream: facts.stream, status: 'rejected', reason: refusal.kind, estimate });
      throw refusal;
    };

    // Limits (may wait on Redis), then — in one synchronous step — budgets and the ledger row.
    let admitAndRecord: (record: () => void) => Admission;
    try {
      admitAndRecord = await acquireLimits(deps.admission, caller, estimate, {
        headers: client.headers,
        query: (name) => new URL(c.req.url).searchParams.get(name) ?? undefined,
        now: startedAt,
      });
    } catch (error) {
      if (error instanceof AdmissionRefused) refuse(error);
      throw error;
    }
    let recorded: Promise<void> | undefined;
    let admission: Admission;
    try {
      admission = admitAndRecord(() => {
        recorded = deps.ledger.begin({
          requestId,
          keyId: caller.key.id,
          tenantId: caller.key.tenantId,
          createdAt: startedAt,
          endpoint,
          model,
          stream: facts.stream,
          estPromptTokens: estimate.promptTokens,
          estCompletionTokens: estimate.completionTokensReserved,
          estCostMicros: estimate.reservedMicroUsd,
          priceKnown: price.known,
        });
      });
    } catch (error) {
      if (error instanceof AdmissionRefused) refuse(error);
      throw error;
    }
    try {
      await recorded;
    } catch (error) {
      // Not recorded means not forwarded: the ledger never misses a request that went upstream.
      admission.release();
      throw new TollgateError('ledger_unavailable', 'The request could not be recorded, so it was not sent. Try again shortly.', { cause: error });
    }

    const settledEstimate = estimate;
    let sentAt = startedAt;
    const finish = (ending: Ending): void => {
      const completedAt = now();
      const cost = settle({
        estimate: settledEstimate,
        reported: ending.usage,
        accepted: ending.accepted,
        upstreamError: ending.outcome === 'upstream_error',
        streamedText: ending.streamedText,
        countTokens: (text) => countCompletionTokens(text, model),
      });
      const completion: Completion = {
        requestId,
        completedAt,
        status: ending.outcome,
        httpStatus: ending.status,
        promptTokens: cost.usage.promptTokens,
        cachedTokens: cost.usage.cachedTokens,
        completionTokens: cost.usage.completionTokens,
        reasoningTokens: cost.usage.reasoningTokens,
        costMicros: cost.costMicros,
        usageSource: cost.source,
        latencyMs: completedAt - startedAt,
        ttftMs: ending.firstTokenAt === undefined ? null : ending.firstTokenAt - startedAt,
        upstreamRequestId: ending.upstreamRequestId ?? null,
        errorCode: ending.errorCode ?? null,
      };
      deps.ledger.complete(completion);
      admission.settle({ tokens: completion.promptTokens + completion.completionTokens, microUsd: completion.costMicros });
      const m = deps.metrics;
      const keyLabel = m.keyLabel(caller.key);
      m.requests.inc({ key: keyLabel, model, endpoint, outcome: ending.outcome });
      m.recordUsage(keyLabel, model, completion.promptTokens, completion.completionTokens, completion.costMicros / 1_000_000);
      m.upstreamDuration.observe({ endpoint, stream: String(facts.stream) }, (completedAt - sentAt) / 1000);
      if (completion.ttftMs !== null) m.timeToFirstToken.observe({ endpoint }, completion.ttftMs / 1000);
      if (cost.source === 'reported' && settledEstimate.promptTokens > 0) {
        m.estimateRatio.observe({ endpoint }, completion.promptTokens / settledEstimate.promptTokens);
      }
      deps.logger.info(
        {
          requestId,
          keyId: caller.key.id,
          endpoint,
          model,
          stream: facts.stream,
          outcome: ending.outcome,
          status: ending.status,
          promptTokens: completion.promptTokens,
          completionTokens: completion.completionTokens,
          costMicros: completion.costMicros,
          estCostMicros: settledEstimate.reservedMicroUsd,
          latencyMs: completion.latencyMs,
          ttftMs: completion.ttftMs ?? undefined,
          usageSource: cost.source,
          upstreamRequestId: completion.upstreamRequestId ?? undefined,
          errorCode: completion.errorCode ?? undefined,
        },
        'request',
      );
    };

    const abort = client.abort;
    let response: UpstreamResponse;
    sentAt = now();
    try {
      response = await deps.upstream.send({
        method: 'POST',
        path: upstreamPath(c.req.url),
        headers: { ...toUpstreamHeaders(client.headers, true), 'x-client-request-id': requestId },
        body: upstreamBody,
        signal: abort.signal,
      });
    } catch (error) {
      const clientGone = abort.signal.aborted;
      const failure = clientGone ? undefined : toUpstreamError(error);
      const reachedUpstream = clientGone || !failedBeforeSending(error);
      finish({
        outcome: clientGone ? 'client_aborted' : failure?.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted',
        status: null,
        accepted: reachedUpstream,
        usage: undefined,
        streamedText: '',
        firstTokenAt: undefined,
        upstreamRequestId: undefined,
        errorCode: failure?.code ?? 'client_aborted',
      });
      throw failure ?? new TollgateError('client_closed_request', 'The client closed the request.');
    }

    const upstreamRequestId = headerValue(response.headers['x-request-id']);
    const ok = response.status >= 200 && response.status < 300;
    if (isEventStream(response.headers)) {
      const tap = new SseTap({ endpoint, stripUsageChunk: injectUsage, now });
      const stream = relayStream(response, tap, endpoint, abort, (outcome, errorCode) =>
        finish({
          outcome: ok ? outcome : 'upstream_error',
          status: response.status,
          accepted: ok,
          usage: tap.usage,
          streamedText: tap.usage === undefined ? tap.completionText() : '',
          firstTokenAt: tap.firstTokenTime,
          upstreamRequestId,
          errorCode,
        }),
      );
      return new Response(stream, { status: response.status, headers: { ...toClientHeaders(response.headers, requestId, true, response.status), ...admission.headers } });
    }

    let answer: Buffer;
    try {
      answer = await readAll(response.body);
    } catch (error) {
      const failure = toUpstreamError(error);
      const clientGone = abort.signal.aborted;
      finish({
        outcome: clientGone ? 'client_aborted' : failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted',
        status: response.status,
        accepted: ok,
        usage: undefined,
        streamedText: '',
        firstTokenAt: undefined,
        upstreamRequestId,
        errorCode: clientGone ? 'client_aborted' : failure.code,
      });
      throw clientGone ? new TollgateError('client_closed_request', 'The client closed the request.') : failure;
    }
    const usage = ok ? usageFromJsonBytes(answer) : undefined;
    finish({
      outcome: ok ? 'ok' : 'upstream_error',
      status: response.status,
      accepted: ok,
      usage,
      streamedText: ok && usage === undefined ? completionTextOfJson(answer) : '',
      firstTokenAt: undefined,
      upstreamRequestId,
      errorCode: ok ? undefined : upstreamErrorCode(answer),
    });
    return new Response(asBody(answer), { status: response.status, headers: { ...toClientHeaders(response.headers, requestId, false, response.status), ...admission.headers } });
  }

  return routes;
}

/** A refusal before forwarding, as the TollgateError the client gets. */
function asRefusal(error: unknown): TollgateError {
  if (error instanceof TollgateError) return error;
  if (error instanceof EstimateInputError) {
    const code: ErrorCode = error.code === 'context_length_exceeded' ? 'context_length_exceeded' : error.code === 'invalid_type' ? 'invalid_type' : 'invalid_value';
    return new TollgateError(code, error.message, { param: error.param });
  }
  return new TollgateError('internal_error', 'Tollgate could not read this request.', { cause: error });
}

function modelOf(error: unknown): string {
  return error instanceof TollgateError && error.param === 'model' ? '(invalid)' : '(unknown)';
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

function filterModelList(bytes: Buffer, caller: Caller): Buffer {
  try {
    const list = JSON.parse(bytes.toString('utf8')) as { data?: Array<{ id?: unknown }> };
    if (!Array.isArray(list.data)) return bytes;
    list.data = list.data.filter((model) => {
      try {
        checkModelAllowed(caller.policy, String(model.id));
        return true;
      } catch {
        return false;
      }
    });
    return Buffer.from(JSON.stringify(list));
  } catch {
    return bytes;
  }
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
