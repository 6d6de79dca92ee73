/**
 * The shapes of Tollgate's prices. Money is integer micro-USD: token prices per 1M tokens
 * ($0.15 / 1M → 150000), built-in tool prices per call, container or image.
 */

/** Token prices of one service tier (or of a model's audio tokens), integer µUSD per 1M tokens. */
export interface TokenPrices {
  readonly inputMicroUsdPer1M: number;
  /** Price of prompt tokens served from the prompt cache (equal to input where there is none). */
  readonly cachedInputMicroUsdPer1M: number;
  readonly outputMicroUsdPer1M: number;
}

/** One model's price and limits. The top-level token prices are the standard (default) tier. */
export interface ModelPrice extends TokenPrices {
  /** Prompt + completion tokens the model accepts, when known. */
  readonly contextWindow?: number;
  /** Largest completion the model produces, when known. */
  readonly maxOutputTokens?: number;
  /** `service_tier: "priority"` prices, where OpenAI lists them. */
  readonly priority?: TokenPrices;
  /** `service_tier: "flex"` prices, where OpenAI lists them. */
  readonly flex?: TokenPrices;
  /**
   * Batch prices (OpenAI's Batch API, Anthropic's Message Batches), where they are not half the
   * standard ones — the default both providers list (src/batches/batch-estimate.ts).
   */
  readonly batch?: TokenPrices;
  /**
   * Audio tokens (`…_tokens_details.audio_tokens`), for models that hear or speak. Cached audio
   * tokens are not reported apart from cached text ones, so `cachedInputMicroUsdPer1M` is unused
   * for billing and kept for the record.
   */
  readonly audio?: TokenPrices;
  /**
   * Prices of a request whose prompt (input, cache reads and writes) exceeds `aboveTokens`: every
   * token of it, output included, bills at these (Anthropic's long-context pricing).
   */
  readonly longContext?: { readonly aboveTokens: number; readonly prices: TokenPrices };
}

/** Prices of the Responses API's built-in tools, integer µUSD per unit. */
export interface ToolPrices {
  /** One `web_search` call (also `web_search_preview` on reasoning models). */
  readonly webSearchCall: number;
  /** One `web_search_preview` call on a non-reasoning model. */
  readonly webSearchPreviewCall: number;
  /** One `file_search` call. */
  readonly fileSearchCall: number;
  /** One Code Interpreter container session, by memory limit (`1g`, `4g`, `16g`, `64g`). */
  readonly codeInterpreterContainer: Readonly<Record<string, number>>;
  /** One generated image, by image model, then quality (`low`…), then size (`1024x1024`…). */
  readonly imageGeneration: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, number>>>>>>;
}

/** Prices by model name (lower-case, no provider prefix), tool prices and the price of unknown models. */
export interface PriceTable {
  readonly models: Readonly<Record<string, ModelPrice>>;
  /** The price of models not in `models` (see `fallbackExplicit`). */
  readonly fallback: ModelPrice;
  /**
   * True when the config set `fallback`; false when it is {@link highestPrices} of the table.
   * Keys with a budget or a `usd` limit always get the highest prices for unknown models.
   */
  readonly fallbackExplicit?: boolean;
  readonly tools: ToolPrices;
  /** Where and when the prices were taken, for humans. */
  readonly source?: string;
}

/** Built-in tool calls a response made (Responses API `output` items). */
export interface ToolCalls {
  readonly webSearch?: number;
  readonly fileSearch?: number;
  /** Distinct Code Interpreter containers used. */
  readonly codeInterpreter?: number;
  readonly imageGeneration?: number;
}

/** What one built-in tool unit costs for one request (its tools' settings chose the rate), µUSD. */
export interface ToolRates {
  readonly webSearchCall: number;
  readonly fileSearchCall: number;
  readonly codeInterpreterContainer: number;
  readonly imageGenerationCall: number;
}

/**
 * Usage to price. `cachedTokens`, `audioPromptTokens` and the cache writes are part of `promptTokens`;
 * reasoning and `audioCompletionTokens` are part of `completionTokens`. `serviceTier` is the
 * tier the upstream says it used (`priority`, `flex`; anything else is the standard price).
 */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly cachedTokens?: number;
  readonly completionTokens: number;
  readonly audioPromptTokens?: number;
  readonly audioCompletionTokens?: number;
  readonly serviceTier?: string | undefined;
  readonly toolCalls?: ToolCalls | undefined;
  /** Prompt tokens written to the prompt cache for 5 minutes (Anthropic: 1.25× the input price). */
  readonly cacheWrite5mTokens?: number;
  /** Prompt tokens written to the prompt cache for 1 hour (Anthropic: 2× the input price). */
  readonly cacheWrite1hTokens?: number;
}

/** How resolvePrice (prices.ts) found a price. */
export type PriceMatch = 'exact' | 'snapshot' | 'fine-tune-base' | 'fallback';

/** A price the table did not have, and what was used instead. */
export type PriceAssumption = 'unknown-model' | 'priority' | 'audio';

/** A price resolved for a request's model, with every tier and audio price filled in. */
export interface ResolvedPrice extends ModelPrice {
  /** The table entry used (the request's normalised name when the fallback was used). */
  readonly model: string;
  readonly known: boolean;
  readonly matchedBy: PriceMatch;
  readonly priority: TokenPrices;
  readonly flex: TokenPrices;
  readonly audio: TokenPrices;
  /** Prices the table lacked for this model and that were filled by rule (see prices.ts). */
  readonly assumed: readonly PriceAssumption[];
}
