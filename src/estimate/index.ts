/**
 * Prices a request before it leaves: prompt tokens counted the way the API bills them, the
 * completion reserved, the whole reservation priced in integer micro-USD.
 *
 * - {@link openBody} (for the proxy) reads a client's bytes — inline when small, on a worker from
 *   the raw bytes when large — and estimates what it read.
 * - {@link estimateRequest} (async) counts small bodies inline and hands a body
 *   to a worker thread as soon as counting it would cost more than
 *   {@link EstimatorConfig.offloadThresholdChars} uncached characters (≈10–15 ms of work at
 *   worst), so the event loop never stalls on a large or hostile body.
 * - {@link estimateRequestSync} (CLI, tests) does everything on the calling thread.
 * Both give the same result. Repeated texts (system prompts, tools, earlier turns) are counted
 * once per process and then come from a bounded LRU.
 */
import { claudeTextTokens } from './count-messages.js';
import { DEFAULT_CACHE_LIMITS, TokenCountCache, type TokenCountCacheLimits } from './count-cache.js';
import type { Endpoint } from '../endpoints.js';
import { encodingForBody, estimateBody, type Estimate, type EstimateOptions } from './estimate-body.js';
import { EstimateInputError } from './errors.js';
import { encodingForModel } from './models.js';
import { builtinPriceTable } from './prices.js';
import { createTextCounter, InlineBudgetExceeded } from './text-counter.js';
import { countTextTokens, loadEncoding, loadEncodingSync, type EncodingName } from './tokenizer.js';
import { EstimateWorkerPool } from './worker-pool.js';
import { TollgateError, type ErrorCode } from '../domain/errors.js';
import { ownsItsBuffer } from '../http/body.js';
import { readClientBody, type ClientBody } from './client-body.js';

export { withStoredHistory, type Estimate, type EstimateOptions } from './estimate-body.js';
export type { References } from './unseen.js';
export { EstimateInputError } from './errors.js';
export { builtinPriceTable, costMicroUsd, mergePriceTable, priceTableOverrideSchema, resolvePrice, type ModelPrice } from './prices.js';
export { encodingForModel } from './models.js';
export type { EncodingName } from './tokenizer.js';
export { readDataUrlImageSize } from './images.js';

/** Process-wide settings of the estimator (call before the first estimate, or any time). */
export interface EstimatorConfig {
  /** Worker threads for large bodies; 0 counts everything inline. Default 1. */
  readonly workerThreads: number;
  /**
   * Uncached characters counted inline before a body is handed to a worker. Default 4096:
   * measured worst case (cold, long runs of random letters) ≈ 2 µs per character, so ≤ ~8 ms
   * inline; normal text ≈ 0.1 µs per character.
   */
  readonly offloadThresholdChars: number;
  /**
   * Bodies of at least this many bytes are read (parsed, checked) and estimated on a worker, from
   * their raw bytes. Default 64 KiB: measured on a 2-core machine, JSON.parse, the duplicate-key
   * scan and the estimate of the densest body (tiny messages) take ≈ 1–1.5 ms at that size.
   */
  readonly offloadThresholdBytes: number;
  /** Bounds of the main thread's LRU of whole-text counts. */
  readonly cacheLimits: TokenCountCacheLimits;
}

/** Counters for metrics. */
export interface EstimatorStats {
  readonly inline: number;
  readonly offloaded: number;
  /** Bodies read on a worker from their raw bytes (at least `offloadThresholdBytes`). */
  readonly bodiesOffloaded: number;
  /** Offloads that failed (worker crash or start failure): estimated inline instead, or — a body already handed over — refused. */
  readonly workerFailures: number;
  readonly cacheEntries: number;
  readonly cacheBytes: number;
}

const DEFAULT_CONFIG: EstimatorConfig = {
  workerThreads: 1,
  offloadThresholdChars: 4_096,
  offloadThresholdBytes: 64 * 1024,
  cacheLimits: DEFAULT_CACHE_LIMITS,
};

let config: EstimatorConfig = DEFAULT_CONFIG;
let cache = new TokenCountCache(config.cacheLimits);
let pool: EstimateWorkerPool | null = null;
const stats = { inline: 0, offloaded: 0, bodiesOffloaded: 0, workerFailures: 0 };

/** Changes the estimator's settings; a new worker count applies after {@link closeEstimator}. */
export function configureEstimator(changes: Partial<EstimatorConfig>): void {
  const next = { ...config, ...changes };
  if (!Number.isSafeInteger(next.workerThreads) || next.workerThreads < 0) throw new RangeError('workerThreads must be a non-negative integer');
  if (!Number.isSafeInteger(next.offloadThresholdChars) || next.offloadThresholdChars < 0) {
    throw new RangeError('offloadThresholdChars must be a non-negative integer');
  }
  if (!Number.isSafeInteger(next.offloadThresholdBytes) || next.offloadThresholdBytes < 0) {
    throw new RangeError('offloadThresholdBytes must be a non-negative integer');
  }
  if (next.cacheLimits !== config.cacheLimits) cache = new TokenCountCache(next.cacheLimits);
  config = next;
}

/** Current counters. */
export function getEstimatorStats(): EstimatorStats {
  return { ...stats, cacheEntries: cache.size, cacheBytes: cache.byteSize };
}

/** Empties the main thread's count cache (tests, benchmarks). */
export function clearEstimateCache(): void {
  cache.clear();
}

/**
 * Estimates a request on the calling thread. Throws {@link EstimateInputError} for a malformed
 * body or one that does not fit the model's context window; loads the encoding on first use
 * (≈0.2–0.3 s, once per process).
 */
export function estimateRequestSync(endpoint: Endpoint, body: unknown, options: EstimateOptions): Estimate {
  return estimateBody(endpoint, body, options, (encoding) => createTextCounter(loadEncodingSync(encoding), { cache }));
}

/** A client's body, read and checked (src/estimate/client-body.ts), ready to be estimated. */
export interface OpenBody extends ClientBody {
  /** The client's bytes, unchanged (a large body's come back from the worker). */
  readonly bytes: Buffer;
  /** Read on a worker thread (a large body): the event loop never parsed it. */
  readonly offloaded: boolean;
  /** Estimates the body — as `model`, when given (a downgrade). At most once. */
  estimate(options: EstimateOptions, model?: string): Promise<Estimate>;
  /** Lets the body go without estimating it (a refusal). A no-op after {@link OpenBody.estimate}. */
  close(): void;
}

/**
 * Reads a client's body: parses it, refuses a duplicate key, reads its facts and the fields other
 * stages read, and maps its top level for splicing. A small body is read here; one of at least
 * {@link EstimatorConfig.offloadThresholdBytes} goes to a worker as raw bytes (transferred, not
 * copied), which parses and checks it and keeps it for the estimate: the event loop never parses
 * nor walks it, and structured-clones only the small answer. Same result and same 400s either
 * way (TollgateError; EstimateInputError from the estimate). A handed-over `bytes` reads empty
 * afterwards (its buffer moved): use the returned {@link OpenBody.bytes}.
 */
export async function openBody(endpoint: Endpoint, bytes: Buffer): Promise<OpenBody> {
  if (config.workerThreads === 0 || bytes.byteLength < config.offloadThresholdBytes) {
    const read = readClientBody(endpoint, bytes);
    return {
      bytes,
      facts: read.facts,
      fields: read.fields,
      layout: read.layout,
      offloaded: false,
      estimate: (options, model) => estimateRequest(endpoint, model === undefined ? read.body : { ...read.body, model }, options),
      close: () => undefined,
    };
  }
  pool ??= new EstimateWorkerPool(config.workerThreads);
  // The buffer is transferred whole: a view that shares its ArrayBuffer (an offset, a socket's
  // read, Node's pool of small buffers) is copied into one of its own first. A large body read
  // from a client has its own (src/http/body.ts).
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.byteLength >= Buffer.poolSize >>> 1;
  const shared = !ownsItsBuffer(bytes) && !whole;
  const own = shared ? Buffer.from(new ArrayBuffer(bytes.byteLength)) : bytes;
  if (shared) bytes.copy(own);
  const length = own.byteLength; // the view reads 0 once its buffer is transferred
  let opened;
  try {
    opened = await pool.open(endpoint, own);
  } catch (error) {
    // The bytes went with the worker: nothing is left to read inline.
    stats.workerFailures += 1;
    throw new TollgateError('internal_error', 'Tollgate could not read this request body; try again.', { cause: error });
  }
  const { result } = opened;
  stats.bodiesOffloaded += 1;
  if (!result.ok) {
    if (result.refusal === undefined)
      throw new TollgateError('internal_error', 'Tollgate could not read this request body.', { cause: new Error(result.message) });
    throw new TollgateError(result.refusal.code as ErrorCode, result.refusal.message, { param: result.refusal.param });
  }
  const worker = opened;
  return {
    bytes: Buffer.from(result.buffer, 0, length),
    facts: result.facts,
    fields: result.fields,
    layout: result.layout,
    offloaded: true,
    async estimate(options, model) {
      let answer;
      try {
        answer = await worker.estimate(endpoint, model, options, config.offloadThresholdChars);
      } catch (error) {
        stats.workerFailures += 1;
        throw new TollgateError('internal_error', 'Tollgate could not estimate this request; try again.', { cause: error });
      }
      stats.offloaded += 1;
      if (!answer.ok) throw reviveError(answer);
      for (const [key, count] of answer.learned) cache.set(key, count);
      return answer.estimate;
    },
    close: () => worker.close(),
  };
}

function reviveError(result: Extract<Awaited<ReturnType<EstimateWorkerPool['run']>>, { ok: false }>): Error {
  const { error } = result;
  if (error.kind === 'input' && error.code !== null) return new EstimateInputError(error.message, error.param, error.code);
  return new Error(`estimate worker failed: ${error.message}`);
}

/**
 * Estimates a request without blocking the event loop for long: the encoding loads in slices,
 * small bodies are counted inline, large ones on a worker thread. Same result as
 * {@link estimateRequestSync}; rejects with {@link EstimateInputError} for bad input.
 */
export async function estimateRequest(endpoint: Endpoint, body: unknown, options: EstimateOptions): Promise<Estimate> {
  const encodingName = encodingForBody(body);
  const encoding = await loadEncoding(encodingName);
  if (config.workerThreads === 0) {
    stats.inline += 1;
    return estimateBody(endpoint, body, options, () => createTextCounter(encoding, { cache }));
  }
  try {
    const estimate = estimateBody(endpoint, body, options, () => createTextCounter(encoding, { cache, budgetChars: config.offloadThresholdChars }));
    stats.inline += 1;
    return estimate;
  } catch (error) {
    if (!(error instanceof InlineBudgetExceeded)) throw error;
  }
  pool ??= new EstimateWorkerPool(config.workerThreads);
  let result;
  try {
    result = await pool.run({ endpoint, body, options, learnedMaxChars: config.offloadThresholdChars });
  } catch {
    // A worker that cannot start or dies must not fail the request: count it here instead.
    stats.workerFailures += 1;
    return estimateRequestSync(endpoint, body, options);
  }
  stats.offloaded += 1;
  if (!result.ok) throw reviveError(result);
  for (const [key, count] of result.learned) cache.set(key, count);
  return result.estimate;
}

/**
 * Loads the encodings ahead of the first request (in slices, without blocking) and, when
 * `startWorkers` is set, starts the worker pool with a tiny job so its first real job is warm.
 */
export async function warmEstimator(options: { encodings?: EncodingName[]; startWorkers?: boolean } = {}): Promise<void> {
  const encodings = options.encodings ?? ['o200k_base'];
  await Promise.all(encodings.map((name) => loadEncoding(name)));
  if (options.startWorkers && config.workerThreads > 0) {
    pool ??= new EstimateWorkerPool(config.workerThreads);
    await pool.run({
      endpoint: 'embeddings',
      body: { model: 'gpt-4o', input: 'warm up' },
      options: { prices: builtinPriceTable, defaultMaxCompletionTokens: 1 },
      learnedMaxChars: 0,
    });
  }
}

/** Terminates the worker pool (a later offload starts a new one). */
export async function closeEstimator(): Promise<void> {
  const current = pool;
  pool = null;
  await current?.close();
}

/**
 * Tokens of streamed completion text, for charging a stream the client aborted or upstream cut
 * off before reporting usage (the proxy concatenates the deltas it forwarded). Exact for the text
 * itself; tool-call framing is not added. Synchronous: ~0.1 µs per character of normal text.
 */
export function countCompletionTokens(text: string, model: string): number {
  return countTextTokens(text, loadEncodingSync(encodingForModel(model)));
}

/**
 * Tokens of completion text from Anthropic's Messages API, whose tokenizer is not public: the
 * same upper bound as its prompts (count-messages.ts).
 */
export function countClaudeCompletionTokens(text: string, model: string): number {
  const encoding = loadEncodingSync(encodingForModel(model));
  return claudeTextTokens(text, (piece) => countTextTokens(piece, encoding));
}
