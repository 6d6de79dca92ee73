/**
 * The one connection pool to the OpenAI-compatible upstream (undici): keep-alive
 * sockets, a connect timeout, a headers timeout and an idle (between-chunks)
 * timeout. Failures come back as {@link TollgateError}s with stable codes.
 * Connections are shared fairly between keys (fair-slots.ts): a request
 * takes a slot before it is sent and gives it back when its exchange ends
 * (upstream-answer.ts, which also reads the answer).
 */
import { Pool, errors as undiciErrors } from 'undici';
import type { Readable } from 'node:stream';
import { TollgateError } from '../domain/errors.js';
import { FairSlots, perOwnerMaxOf, SLOT_WAIT_CODE } from './fair-slots.js';
import { UpstreamStop } from './upstream-stop.js';
import type { LeaveSignal } from '../domain/leave-signal.js';
import { UpstreamCall, type UpstreamResponse } from './upstream-answer.js';

export interface UpstreamOptions {
  /** Base URL including the version path, without trailing slash (e.g. https://api.openai.com/v1). */
  readonly url: string;
  readonly apiKey: string | undefined;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly connections: number;
  /** Share of the connections one key may hold at once (0–1; at least one is left for the others). Default 0.75. */
  readonly maxShare?: number;
  /** Longest a request waits for a connection before a 429 (ms). Default 10 000. */
  readonly queueTimeoutMs?: number;
  /** Headers sent on every request (an upstream's configured extras). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers sent when the client sent none of that name (`anthropic-version`: the client's body follows its own). */
  readonly defaultHeaders?: Readonly<Record<string, string>>;
  /** How the key is sent: `Authorization: Bearer` (default), Azure's `api-key`, Anthropic's `x-api-key`. */
  readonly auth?: 'bearer' | 'api-key' | 'x-api-key' | 'none';
}

export interface UpstreamRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Path below the base URL, starting with "/" (e.g. /chat/completions), query included. */
  readonly path: string;
  readonly headers: Record<string, string>;
  /** A Readable streams through (a batch file upload: never retried, never sent to a fallback). */
  readonly body?: Buffer | Readable;
  /** Aborts the request: the client's signal, or Tollgate's own stop (upstream-stop.ts). */
  readonly signal: AbortSignal | UpstreamStop;
  /** Ends only the wait for a connection (the client left before the request could be sent); default `signal`, when an AbortSignal. */
  readonly queueSignal?: LeaveSignal;
  /** Whose share of the connections this request uses (the key id); without one, the shared "" owner. */
  readonly owner?: string;
}

export type { UpstreamResponse } from './upstream-answer.js';

export interface Upstream {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

/** Creates the pooled upstream client. */
export function createUpstream(options: UpstreamOptions): Upstream {
  const base = new URL(options.url);
  const basePath = base.pathname.replace(/\/+$/, '');
  const pool = new Pool(base.origin, {
    connections: options.connections,
    connectTimeout: options.connectTimeoutMs,
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.idleTimeoutMs,
    keepAliveTimeout: 30_000,
    pipelining: 1,
  });
  const auth = options.auth ?? 'bearer';
  const fixedHeaders: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined && auth !== 'none') {
    if (auth === 'bearer') fixedHeaders.authorization = `Bearer ${options.apiKey}`;
    else fixedHeaders[auth] = options.apiKey;
  }
  const slots = new FairSlots({
    capacity: options.connections,
    perOwnerMax: perOwnerMaxOf(options.connections, options.maxShare ?? 0.75),
    maxWaitMs: options.queueTimeoutMs ?? 10_000,
  });

  return {
    async send(request) {
      const headers: Record<string, string> = { ...options.defaultHeaders, ...request.headers, ...fixedHeaders };
      const queueSignal = request.queueSignal ?? (request.signal instanceof UpstreamStop ? undefined : request.signal);
      const release = await slots.acquire(request.owner ?? '', queueSignal).catch((error: unknown) => {
        throw toUpstreamError(error);
      });
      return new Promise<UpstreamResponse>((resolve, reject) => {
        const call = new UpstreamCall(resolve, (error) => reject(toUpstreamError(error)), release, request.signal, request.body);
        // undici reports a request it cannot take (a closed pool) through the handler, like any other failure.
        pool.dispatch({ method: request.method, path: basePath + request.path, headers, body: request.body ?? null }, call);
      });
    },
    async close() {
      await pool.close();
    },
  };
}

/** Maps an undici/network failure to what the client is told. */
export function toUpstreamError(error: unknown): TollgateError {
  if (error instanceof TollgateError) return error;
  if (error instanceof undiciErrors.ConnectTimeoutError) {
    return new TollgateError('upstream_timeout', 'Timed out connecting to the upstream API.', { cause: error });
  }
  if (error instanceof undiciErrors.HeadersTimeoutError) {
    return new TollgateError('upstream_timeout', 'The upstream API did not answer in time.', { cause: error });
  }
  if (error instanceof undiciErrors.BodyTimeoutError) {
    return new TollgateError('upstream_timeout', 'The upstream API stopped sending its answer.', { cause: error });
  }
  const code = (error as { code?: unknown } | null)?.code;
  return new TollgateError('upstream_unreachable', `Could not reach the upstream API${typeof code === 'string' ? ` (${code})` : ''}.`, { cause: error });
}

const CONNECT_ERRORS = new Set([SLOT_WAIT_CODE, 'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** True when a failure happened before the request could reach the upstream (nothing to bill). */
export function failedBeforeSending(error: unknown): boolean {
  // Tollgate's own refusal (no network error underneath, e.g. no upstream configured): never sent.
  if (error instanceof TollgateError && error.cause === undefined) return true;
  // send() wraps failures; judge by the network error underneath.
  const cause = error instanceof TollgateError ? error.cause : error;
  if (cause instanceof undiciErrors.ConnectTimeoutError) return true;
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECT_ERRORS.has(code);
}
