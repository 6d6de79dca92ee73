/**
 * The worst case of a batch, line by line, at batch prices: what Tollgate reserves up front, all
 * or none, before a batch goes upstream. Pure: the estimate takes its counter as an argument
 * (src/estimate/estimate-body.ts), as the synchronous path does.
 *
 * - Each request is estimated as the same body would be on its own (its dialect's counting rules,
 *   unseen input, tools, tier), and its completion reserved at its worst case, never at a default:
 *   `completionBoundPerChoice × choices` — the request's own limit, else the model's output limit
 *   or what its window leaves (reasoning tokens included). A batch cannot be cut mid-way, so,
 *   unlike a bounded synchronous request (src/budgets/output-cap.ts), nothing smaller is offered.
 * - Prices: the table's `batch` prices where an entry lists them, else half the standard ones
 *   (OpenAI's Batch API and Anthropic's Message Batches both bill half), cached input, cache
 *   writes and long-context prices included, whatever `service_tier` a body names. Each µUSD per
 *   1M is halved rounding up, so a batch price is never below half. Audio tokens and built-in tool
 *   calls stay at their full prices: neither provider lists a batch discount for them.
 * - Rounding: a line costs `costMicroUsd` at those prices (exact sum, one ceiling division). For a
 *   standard-tier line without audio or tools, when every price is even in µUSD per 1M (every
 *   built-in one is), its batch cost is exactly ⌈synchronous cost / 2⌉; with odd prices it is at
 *   most ⌈tokens / 2,000,000⌉ µUSD above that. The batch total is the sum of its lines' costs.
 */
import type { Endpoint } from '../endpoints.js';
import { estimateBody, reservationCost, type CounterFactory, type Estimate, type EstimateOptions } from '../estimate/estimate-body.js';
import { EstimateInputError } from '../estimate/errors.js';
import type { ModelPrice, TokenPrices } from '../estimate/price-types.js';
import { refused, type BatchError, type BatchResult } from './batch-errors.js';
import type { BatchRequest, BatchTarget } from './batch-lines.js';

/** Half of each price, rounded up to a whole µUSD per 1M tokens. */
function halved(prices: TokenPrices): TokenPrices {
  return {
    inputMicroUsdPer1M: Math.ceil(prices.inputMicroUsdPer1M / 2),
    cachedInputMicroUsdPer1M: Math.ceil(prices.cachedInputMicroUsdPer1M / 2),
    outputMicroUsdPer1M: Math.ceil(prices.outputMicroUsdPer1M / 2),
  };
}

const batchPrices = new WeakMap<ModelPrice, ModelPrice>();

/**
 * A model's price as a batch bills it: the entry's `batch` prices, else half the standard ones, as
 * every tier (a batch has no priority or flex), long context halved too; audio prices unchanged.
 */
export function batchPriceOf(price: ModelPrice): ModelPrice {
  let batch = batchPrices.get(price);
  if (batch === undefined) {
    const tier = price.batch ?? halved(price);
    const long = price.longContext;
    batch = Object.freeze({
      ...price,
      ...tier,
      priority: tier,
      flex: tier,
      ...(long === undefined ? {} : { longContext: { aboveTokens: long.aboveTokens, prices: halved(long.prices) } }),
    });
    batchPrices.set(price, batch);
  }
  return batch;
}

/** One request's worst case in a batch. */
export interface BatchLineCost {
  /** The request's `model`, as sent. */
  readonly model: string;
  readonly endpoint: Endpoint;
  /** Prompt tokens reserved: counted, plus what was reserved for input Tollgate cannot count. */
  readonly promptTokens: number;
  /** Completion tokens at worst: every choice at its largest possible completion. */
  readonly completionTokens: number;
  /** Prompts (inputs) in the request: the items of an embeddings or completions array, else 1. */
  readonly inputs: number;
  /** The worst case at batch prices, integer µUSD. */
  readonly microUsd: number;
  /** The same worst case at the synchronous prices of the tier the body asks for, integer µUSD. */
  readonly syncMicroUsd: number;
}

/** The worst case of an estimated request, at batch prices (and at synchronous ones, for comparison). */
export function batchLineCost(estimate: Estimate, endpoint: Endpoint): BatchLineCost {
  const completionTokens = estimate.completionBoundPerChoice * estimate.choices;
  const base = estimate.reservationBase;
  return {
    model: estimate.model,
    endpoint,
    promptTokens: base.promptTokens,
    completionTokens,
    inputs: estimate.promptCount,
    microUsd: reservationCost(base, completionTokens, batchPriceOf(estimate.price), estimate.toolRates),
    syncMicroUsd: reservationCost(base, completionTokens, estimate.price, estimate.toolRates),
  };
}

/** An estimate's refusal of a batch request, as the batch's error: its param under the request's body (`body.max_tokens`). */
export function batchErrorOf(error: EstimateInputError, request: BatchRequest): BatchError {
  const param = error.param === null ? request.bodyParam : `${request.bodyParam}.${error.param}`;
  return { code: error.code, message: error.message, line: request.line, param };
}

/**
 * Estimates one checked batch request (batch-lines.ts, anthropic-batch.ts) at its worst case and
 * batch prices, synchronously with counters from `createCounter` (the caller's tokenizer and
 * cache: src/estimate/index.ts builds one). A body the estimate refuses is an error value; only
 * faults (a counter that throws, options out of range) are thrown. An async caller estimates with
 * `estimateRequest` and passes the result to {@link batchLineCost}, an {@link EstimateInputError}
 * to {@link batchErrorOf}: same answers.
 */
export function estimateBatchRequest(request: BatchRequest, options: EstimateOptions, createCounter: CounterFactory): BatchResult<BatchLineCost> {
  const endpoint = request.target.endpoint;
  let estimate: Estimate;
  try {
    estimate = estimateBody(endpoint, request.body, options, createCounter);
  } catch (error) {
    if (error instanceof EstimateInputError) return { ok: false, error: batchErrorOf(error, request) };
    throw error;
  }
  return { ok: true, value: batchLineCost(estimate, endpoint) };
}

/** Sums of a batch's (or one model's) lines. */
export interface BatchTotals {
  readonly requests: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly inputs: number;
  /** Σ of the lines' batch costs, integer µUSD: what the batch reserves. */
  readonly microUsd: number;
}

const EMPTY: BatchTotals = { requests: 0, promptTokens: 0, completionTokens: 0, inputs: 0, microUsd: 0 };

/** Integer sums that stop at 2^53 − 1 instead of losing precision (µUSD past that is 9 billion USD). */
function plus(a: number, b: number): number {
  return Math.min(a + b, Number.MAX_SAFE_INTEGER);
}

function added(totals: BatchTotals, cost: BatchLineCost): BatchTotals {
  return {
    requests: totals.requests + 1,
    promptTokens: plus(totals.promptTokens, cost.promptTokens),
    completionTokens: plus(totals.completionTokens, cost.completionTokens),
    inputs: plus(totals.inputs, cost.inputs),
    microUsd: plus(totals.microUsd, cost.microUsd),
  };
}

/**
 * A batch's worst case, summed as its lines are estimated: the whole and per model (a model's
 * totals are what its own price and limits reserve). Holds one entry per model, nothing per line.
 */
export class BatchCost {
  #total: BatchTotals = EMPTY;
  readonly #byModel = new Map<string, BatchTotals>();

  /** Adds one line's worst case. */
  add(cost: BatchLineCost): void {
    this.#total = added(this.#total, cost);
    this.#byModel.set(cost.model, added(this.#byModel.get(cost.model) ?? EMPTY, cost));
  }

  get total(): BatchTotals {
    return this.#total;
  }

  /** Totals per model, in the order models first appeared. */
  byModel(): ReadonlyMap<string, BatchTotals> {
    return this.#byModel;
  }

  /** The batch-wide input limit of its target (50,000 embedding inputs) when the lines so far pass it, as an error. */
  inputsError(target: BatchTarget, line: number | null): BatchError | undefined {
    const max = target.maxInputs;
    if (max === undefined || this.#total.inputs <= max) return undefined;
    return refused('too_many_tasks', `A batch to ${target.url} may hold at most ${max} inputs across its requests.`, line, null).error;
  }
}
