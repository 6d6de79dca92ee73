/**
 * The estimate itself, synchronous and pure given a text counter: validate the body, count the
 * prompt by its endpoint's rules (prompt-rules.ts), reserve the completion, price the whole
 * reservation.
 */
import type { Endpoint } from '../endpoints.js';
import type { CountContext } from './count-parts.js';
import { EstimateInputError } from './errors.js';
import { encodingForModel } from './models.js';
import type { RequestedTier } from './price-request.js';
import type { ModelPrice, TokenUsage, ToolCalls, ToolRates } from './price-types.js';
import { costMicroUsd, resolvePrice, type PriceTable, type ResolvedPrice, type UnknownModelMode } from './prices.js';
import { promptRulesOf } from './prompt-rules.js';
import { isJsonObject, type JsonObject } from './read-body.js';
import type { TextCounter } from './text-counter.js';
import type { EncodingName } from './tokenizer.js';
import { onlyStoredHistory, roomBeside, UnseenTally, unseenReservation, type References, type UnseenInput } from './unseen.js';

/** Per-request estimate options (prices from config, the policy's default completion). */
export interface EstimateOptions {
  /** Price table: the built-in one, or the built-in merged with the config's override. */
  readonly prices: PriceTable;
  /** Completion tokens reserved per choice when the request sets no `max_*` limit. */
  readonly defaultMaxCompletionTokens: number;
  /**
   * The most input tokens reserved for input Tollgate cannot count (stored history, files, MCP
   * servers, hosted tools' results: unseen.ts); any more is settled as debt from the usage.
   * Default: what the model's context window leaves beside the counted prompt.
   */
  readonly unseenInputTokens?: number;
  /**
   * Largest completion per choice assumed for a model whose table entry has no `maxOutputTokens`,
   * when a budget needs the worst case. Default {@link DEFAULT_OUTPUT_BOUND}.
   */
  readonly fallbackMaxOutputTokens?: number;
  /** Price models the table lacks at its highest prices (keys with a budget or a `usd` limit). */
  readonly highestForUnknown?: boolean;
  /** Models the table lacks: refused or priced at the fallback, per key (price-fallbacks.ts, refusesUnpricedModel). */
  readonly unknownModels?: UnknownModelMode;
  /**
   * The price to reserve at instead of the table's: a request that may be answered by several
   * upstreams is reserved at the dearest of their prices (src/upstreams/route-prices.ts).
   */
  readonly price?: ResolvedPrice;
  /**
   * Prompt tokens reserved per token counted, ≥ 1: the safety margin for a model whose tokenizer
   * is not public (src/estimate/README.md, "Models without a public tokenizer"). Default 1.
   */
  readonly promptTokenFactor?: number;
}

/** Worst-case completion of a model with no known output limit: the largest common limit today. */
const DEFAULT_OUTPUT_BOUND = 128_000;
/** The window assumed for unseen input when no model of the table has one (a table without windows). */
const DEFAULT_WINDOW = 1_048_576;

/** What a request would cost at most, before it is sent. */
export interface Estimate {
  /** The request's `model`, as sent. */
  readonly model: string;
  readonly encoding: EncodingName;
  /** Prompt tokens counted, plus those reserved for what could not be counted ({@link Estimate.unseen}). */
  readonly promptTokens: number;
  /** Completion tokens reserved: choices × per-choice limit. */
  readonly completionTokensReserved: number;
  /**
   * What rate limits take: promptTokens + completionTokensReserved, less the unseen input reserved
   * only at a bound (`unseen.boundTokens`), which — like the completion's worst case — they settle
   * as debt from the usage instead; budgets hold all of it ({@link Estimate.reservationBase}).
   */
  readonly reservedTokens: number;
  /** Cost of {@link Estimate.reservedTokens}, integer micro-USD (prompt at the uncached input price). */
  readonly reservedMicroUsd: number;
  readonly price: ResolvedPrice;
  /** Completions per prompt reserved for (`n`, or `best_of` when larger); 1 where not applicable. */
  readonly n: number;
  /** Prompts in the request (completions/embeddings accept arrays); 1 otherwise. */
  readonly promptCount: number;
  /** Share of promptTokens that are images. */
  readonly imageTokens: number;
  /** Generations the completion is reserved for: n × prompts (0 for embeddings). */
  readonly choices: number;
  /** The request's own completion limit per choice (`max_completion_tokens`, `max_tokens`, `max_output_tokens`). */
  readonly clientMaxCompletion: number | undefined;
  /**
   * The most completion tokens one choice can be billed: the client's limit, else the model's
   * output limit (or the window left after the prompt). Reasoning tokens count here, so this,
   * not the default reservation, is what a budget must hold.
   */
  readonly completionBoundPerChoice: number;
  /** Everything a reservation prices besides its completion tokens (see {@link reservationCost}). */
  readonly reservationBase: ReservationBase;
  /** The `service_tier` the request asked for, as reserved (settlement bills the one used). */
  readonly serviceTier: RequestedTier;
  /** The request asks for audio output: its completion is reserved at the audio output price. */
  readonly audioOutput: boolean;
  /** Built-in tool units reserved (Responses `tools`), priced at `toolRates`. */
  readonly toolCallsReserved: ToolCalls;
  /** What one unit of each built-in tool costs for this request (its tools' settings), µUSD. */
  readonly toolRates: ToolRates;
  /** Tool units every answer costs whether its usage lists them or not (chat search models' one search). */
  readonly toolCallsPerRequest: ToolCalls;
  /** µUSD per 1M completion tokens as reserved (tier and audio output included): what one more token costs. */
  readonly completionMicroUsdPer1M: number;
  /** Input the estimate could not count, by kind, and what `promptTokens` reserves for it (unseen.ts). */
  readonly unseen: UnseenInput;
  /** Ids of stored objects the request refers to: each must be the key's own (src/pipeline/ownership.ts). */
  readonly references: References;
}

/** A reservation's usage without its completion: the prompt as reserved, the tier, the tools. */
export interface ReservationBase extends Omit<TokenUsage, 'completionTokens' | 'audioCompletionTokens'> {
  /** Completion tokens are reserved at the audio output price (audio output asked for, and dearer). */
  readonly audioCompletion: boolean;
}

/** What a reservation of `completionTokens` (all choices) costs, µUSD: the one pricing of estimates and output plans. */
export function reservationCost(base: ReservationBase, completionTokens: number, price: ModelPrice, toolRates: ToolRates): number {
  // Every field listed, not `{ ...base, … }`: in Node 20 each field a literal defines after a spread costs ~0.5–0.8 µs.
  const usage: { [K in keyof Required<TokenUsage>]: TokenUsage[K] } = {
    promptTokens: base.promptTokens,
    cachedTokens: base.cachedTokens,
    completionTokens,
    audioPromptTokens: base.audioPromptTokens,
    audioCompletionTokens: base.audioCompletion ? completionTokens : 0,
    serviceTier: base.serviceTier,
    toolCalls: base.toolCalls,
    cacheWrite5mTokens: base.cacheWrite5mTokens,
    cacheWrite1hTokens: base.cacheWrite1hTokens,
  };
  return costMicroUsd(usage, price, toolRates);
}

/** A count with every prompt's tokens multiplied by `factor` (rounded up), for tokenizers Tollgate can only approximate. */
function scaled<T extends { tally: { tokens: number }; perItem?: readonly number[] | undefined }>(counted: T, factor: number): T {
  if (!(factor > 1)) return counted;
  return {
    ...counted,
    tally: { ...counted.tally, tokens: Math.ceil(counted.tally.tokens * factor) },
    ...(counted.perItem === undefined ? {} : { perItem: counted.perItem.map((tokens) => Math.ceil(tokens * factor)) }),
  };
}

/** Creates the counter for an encoding (sync: the encoding must be loadable right now). */
export type CounterFactory = (encoding: EncodingName) => TextCounter;

/** Reads and validates `model`; returns it as sent. */
function readModel(body: unknown): string {
  if (!isJsonObject(body)) {
    throw new EstimateInputError('The request body must be a JSON object.', null, 'invalid_type');
  }
  const model = body['model'];
  if (model === undefined || model === null) {
    throw new EstimateInputError("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  }
  if (typeof model !== 'string') {
    throw new EstimateInputError("Invalid type for 'model': expected a string.", 'model', 'invalid_type');
  }
  if (model.trim().length === 0) {
    throw new EstimateInputError("Invalid value for 'model': must be a non-empty string.", 'model', 'invalid_value');
  }
  return model;
}

/** The encoding a body will be counted with (validates `model` only). */
export function encodingForBody(body: unknown): EncodingName {
  return encodingForModel(readModel(body));
}

function contextError(model: string, window: number, prompt: number, completion: number, param: string): EstimateInputError {
  return new EstimateInputError(
    `This model's maximum context length is ${window} tokens. However, you requested ${prompt + completion} tokens ` +
      `(${prompt} in the prompt, ${completion} for the completion). Please reduce the length of the prompt or completion. (model: ${model})`,
    param,
    'context_length_exceeded',
  );
}

/**
 * Estimates a request synchronously with counters from `createCounter`. Throws only
 * {@link EstimateInputError} for bad input (and whatever `createCounter`'s counter throws, which
 * the async path uses to hand big bodies to a worker).
 */
export function estimateBody(endpoint: Endpoint, body: unknown, options: EstimateOptions, createCounter: CounterFactory): Estimate {
  const model = readModel(body);
  const rules = promptRulesOf(endpoint);
  const object = body as JsonObject;
  const encoding = encodingForModel(model);
  const price = options.price ?? resolvePrice(model, options.prices, { highestForUnknown: options.highestForUnknown === true });
  const unseenTally = new UnseenTally();
  const context: CountContext = { counter: createCounter(encoding), model, unseen: unseenTally };
  const counted = scaled(rules.count(object, context), rules.promptMargin ? (options.promptTokenFactor ?? 1) : 1);
  // Images of unknown size are reserved at their bound with the rest of the unseen input, which
  // never counts against the context window: only what was counted can be too long.
  const unsizedImageTokens = counted.tally.unsizedImageTokens ?? 0;
  const countedTokens = Math.max(0, counted.tally.tokens - unsizedImageTokens);
  const window = price.contextWindow;
  // Input that lives upstream: at most what the window leaves (the table's largest for a model without one).
  const room = roomBeside(window ?? largestWindow(options.prices), countedTokens);
  const windowBounded = unseenTally.windowBounded;
  const reservedUnseen = unseenReservation({ room, imageTokens: unsizedImageTokens, windowBounded, bound: options.unseenInputTokens });
  const unseen: UnseenInput = {
    kinds: unseenTally.kinds,
    imageTokens: unsizedImageTokens,
    reservedTokens: reservedUnseen,
    boundTokens: windowBounded ? reservedUnseen - Math.min(unsizedImageTokens, reservedUnseen) : 0,
    room,
  };
  const promptTokens = countedTokens + unseen.reservedTokens;
  // Several prompts in one completions request are separate generations: each must fit alone.
  const longestPrompt = rules.eachPromptAlone && counted.perItem ? counted.perItem.reduce((a, b) => Math.max(a, b), 0) : countedTokens;

  let perChoice = 0;
  let bound = 0;
  if (!rules.generates) {
    // Nothing generated: each input alone must fit the window.
    if (window !== undefined) {
      const items = counted.perItem ?? [];
      const tooLong = items.findIndex((tokens) => tokens > window);
      if (tooLong !== -1) {
        const input = counted.promptParam;
        const param = items.length === 1 && typeof object[input] === 'string' ? input : `${input}[${tooLong}]`;
        throw contextError(model, window, items[tooLong] as number, 0, param);
      }
    }
  } else if (counted.maxCompletion !== undefined) {
    perChoice = counted.maxCompletion;
    bound = perChoice;
    if (window !== undefined && longestPrompt + perChoice > window) {
      throw contextError(model, window, longestPrompt, perChoice, counted.promptParam);
    }
  } else {
    if (!Number.isSafeInteger(options.defaultMaxCompletionTokens) || options.defaultMaxCompletionTokens < 1) {
      throw new RangeError('EstimateOptions.defaultMaxCompletionTokens must be a positive integer');
    }
    // No limit in the request: the model stops at its output limit or the end of its window,
    // so the default reservation never has to exceed either.
    perChoice = options.defaultMaxCompletionTokens;
    bound = price.maxOutputTokens ?? options.fallbackMaxOutputTokens ?? DEFAULT_OUTPUT_BOUND;
    if (price.maxOutputTokens !== undefined) perChoice = Math.min(perChoice, price.maxOutputTokens);
    if (window !== undefined) {
      if (longestPrompt >= window) throw contextError(model, window, longestPrompt, 0, counted.promptParam);
      perChoice = Math.min(perChoice, window - longestPrompt);
      bound = Math.min(bound, window - longestPrompt);
    }
    bound = Math.max(bound, perChoice);
  }

  const completionTokensReserved = perChoice * counted.n * counted.promptCount;
  const extras = rules.extras(object, model, options.prices.tools);
  const tierPrices = extras.serviceTier === 'standard' ? price : price[extras.serviceTier];
  // Audio output may be every completion token; reserve each at the dearer of audio and text.
  const audioDearer = extras.audioOutput && price.audio.outputMicroUsdPer1M > tierPrices.outputMicroUsdPer1M;
  const reservationBase: ReservationBase = {
    promptTokens,
    cachedTokens: 0,
    // Audio in the prompt at the audio input price when it is dearer (it is for every listed model).
    audioPromptTokens: price.audio.inputMicroUsdPer1M > tierPrices.inputMicroUsdPer1M ? Math.min(promptTokens, counted.tally.audioTokens ?? 0) : 0,
    serviceTier: extras.serviceTier,
    toolCalls: extras.toolCalls,
    audioCompletion: audioDearer,
    // A request that writes the prompt cache may write all of its prompt, at the write price.
    ...(counted.cacheWrite === '1h' ? { cacheWrite1hTokens: promptTokens } : counted.cacheWrite === '5m' ? { cacheWrite5mTokens: promptTokens } : {}),
  };
  const completionMicroUsdPer1M = audioDearer ? price.audio.outputMicroUsdPer1M : tierPrices.outputMicroUsdPer1M;
  return {
    model,
    encoding,
    promptTokens,
    completionTokensReserved,
    ...limitsReservation(reservationBase, unseen.boundTokens, completionTokensReserved, price, extras.toolRates),
    price,
    n: counted.n,
    promptCount: counted.promptCount,
    imageTokens: counted.tally.imageTokens,
    choices: rules.generates ? counted.n * counted.promptCount : 0,
    clientMaxCompletion: rules.generates ? counted.maxCompletion : undefined,
    completionBoundPerChoice: bound,
    reservationBase,
    serviceTier: extras.serviceTier,
    audioOutput: extras.audioOutput,
    toolCallsReserved: extras.toolCalls,
    toolRates: extras.toolRates,
    toolCallsPerRequest: extras.toolCallsPerRequest,
    completionMicroUsdPer1M,
    unseen,
    references: unseenTally.references(),
  };
}

/**
 * The estimate with a stored response's history reserved at what it is known to bill
 * (`tokens`: the input and output its usage reported, which the API bills again as input),
 * instead of at the window — when that history is the only input the estimate could not count.
 * Never more than the window leaves beside the counted prompt. Pure.
 */
export function withStoredHistory(estimate: Estimate, tokens: number): Estimate {
  const { unseen } = estimate;
  if (!onlyStoredHistory(unseen)) return estimate;
  const reserved = unseenReservation({
    room: unseen.room,
    imageTokens: unseen.imageTokens,
    windowBounded: true,
    bound: undefined,
    knownHistory: Math.max(0, tokens),
  });
  if (reserved === unseen.reservedTokens) return estimate;
  const promptTokens = estimate.promptTokens - unseen.reservedTokens + reserved;
  const base = estimate.reservationBase;
  const reservationBase: ReservationBase = {
    ...base,
    promptTokens,
    ...(base.cacheWrite1hTokens === undefined ? {} : { cacheWrite1hTokens: promptTokens }),
    ...(base.cacheWrite5mTokens === undefined ? {} : { cacheWrite5mTokens: promptTokens }),
  };
  return {
    ...estimate,
    promptTokens,
    // Known now: rate limits take it too.
    ...limitsReservation(reservationBase, 0, estimate.completionTokensReserved, estimate.price, estimate.toolRates),
    reservationBase,
    unseen: { ...unseen, reservedTokens: reserved, boundTokens: 0 },
  };
}

/** The tokens and cost rate limits take: the reservation less the unseen input reserved only at a bound. */
function limitsReservation(
  base: ReservationBase,
  boundTokens: number,
  completionTokens: number,
  price: ModelPrice,
  toolRates: ToolRates,
): Pick<Estimate, 'reservedTokens' | 'reservedMicroUsd'> {
  const promptTokens = base.promptTokens - boundTokens;
  const taken: ReservationBase =
    boundTokens === 0
      ? base
      : {
          ...base,
          promptTokens,
          ...(base.cacheWrite1hTokens === undefined ? {} : { cacheWrite1hTokens: promptTokens }),
          ...(base.cacheWrite5mTokens === undefined ? {} : { cacheWrite5mTokens: promptTokens }),
        };
  return { reservedTokens: promptTokens + completionTokens, reservedMicroUsd: reservationCost(taken, completionTokens, price, toolRates) };
}

const largestWindows = new WeakMap<PriceTable, number>();

/** The largest context window of a table's models: the room assumed for a model without one. */
function largestWindow(table: PriceTable): number {
  let largest = largestWindows.get(table);
  if (largest === undefined) {
    largest = Math.max(table.fallback.contextWindow ?? 0, ...Object.values(table.models).map((entry) => entry.contextWindow ?? 0));
    if (largest === 0) largest = DEFAULT_WINDOW;
    largestWindows.set(table, largest);
  }
  return largest;
}
