/**
 * Price overrides as people write them in the config file (USD per 1M tokens, USD per tool unit),
 * parsed to integer micro-USD, and merged over a table: models added or replaced whole, tool prices
 * merged, the fallback replaced or recomputed as the merged table's highest prices.
 */
import { z } from 'zod';
import { MICROS_PER_USD as USD, usdToMicros } from '../domain/money.js';
import { stripProviderPrefix } from './models.js';
import { highestPrices } from './price-fallbacks.js';
import type { ModelPrice, PriceTable, TokenPrices, ToolPrices } from './price-types.js';

/** Largest price we accept in an override: $1,000,000 per 1M tokens (or per tool call). */
const MAX_USD = 1_000_000;

const usdAmountSchema = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const micro = typeof value === 'number' && (!Number.isFinite(value) || value < 0) ? null : usdToMicros(value);
  if (micro === null || micro > MAX_USD * USD) {
    ctx.addIssue({ code: 'custom', message: 'expected a non-negative USD amount with at most 6 decimals' });
    return z.NEVER;
  }
  return micro;
});

const tokenPricesSchema = z
  .strictObject({
    /** USD per 1M input tokens. */
    input: usdAmountSchema,
    /** USD per 1M cached input tokens; defaults to `input` (no cache discount). */
    cachedInput: usdAmountSchema.optional(),
    /** USD per 1M output tokens. */
    output: usdAmountSchema,
  })
  .transform((entry): TokenPrices => ({
    inputMicroUsdPer1M: entry.input,
    cachedInputMicroUsdPer1M: entry.cachedInput ?? entry.input,
    outputMicroUsdPer1M: entry.output,
  }));

const modelPriceOverrideSchema = z
  .strictObject({
    input: usdAmountSchema,
    cachedInput: usdAmountSchema.optional(),
    output: usdAmountSchema,
    /** Prompt + completion tokens the model accepts. */
    contextWindow: z.number().int().positive().optional(),
    /** Largest completion the model produces. */
    maxOutput: z.number().int().positive().optional(),
    /** `service_tier: "priority"` prices (USD per 1M); default: the standard ones × 5/2. */
    priority: tokenPricesSchema.optional(),
    /** `service_tier: "flex"` prices (USD per 1M); default: the standard ones. */
    flex: tokenPricesSchema.optional(),
    /** Audio tokens (USD per 1M audio tokens); default: the table's highest audio prices. */
    audio: tokenPricesSchema.optional(),
    /** Prices of a request whose prompt exceeds `aboveTokens` (every token of it): `{"aboveTokens": 200000, "input": 6, "cachedInput": 0.6, "output": 22.5}`. */
    longContext: z
      .strictObject({ aboveTokens: z.number().int().positive(), input: usdAmountSchema, cachedInput: usdAmountSchema.optional(), output: usdAmountSchema })
      .optional(),
  })
  .transform((entry): ModelPrice => ({
    inputMicroUsdPer1M: entry.input,
    cachedInputMicroUsdPer1M: entry.cachedInput ?? entry.input,
    outputMicroUsdPer1M: entry.output,
    ...(entry.contextWindow === undefined ? {} : { contextWindow: entry.contextWindow }),
    ...(entry.maxOutput === undefined ? {} : { maxOutputTokens: entry.maxOutput }),
    ...(entry.priority === undefined ? {} : { priority: entry.priority }),
    ...(entry.flex === undefined ? {} : { flex: entry.flex }),
    ...(entry.audio === undefined ? {} : { audio: entry.audio }),
    ...(entry.longContext === undefined
      ? {}
      : {
          longContext: {
            aboveTokens: entry.longContext.aboveTokens,
            prices: {
              inputMicroUsdPer1M: entry.longContext.input,
              cachedInputMicroUsdPer1M: entry.longContext.cachedInput ?? entry.longContext.input,
              outputMicroUsdPer1M: entry.longContext.output,
            },
          },
        }),
  }));

const toolPricesOverrideSchema = z.strictObject({
  /** USD per `web_search` call ($10 / 1k calls → 0.01). */
  webSearchCall: usdAmountSchema.optional(),
  /** USD per `web_search_preview` call on a non-reasoning model. */
  webSearchPreviewCall: usdAmountSchema.optional(),
  /** USD per `file_search` call. */
  fileSearchCall: usdAmountSchema.optional(),
  /** USD per Code Interpreter container session, by memory limit: `{"1g": 0.03}`. */
  codeInterpreterContainer: z.record(z.string().min(1), usdAmountSchema).optional(),
  /** USD per image, by image model, quality and size: `{"gpt-image-1": {"high": {"1024x1024": 0.167}}}`. */
  imageGeneration: z.record(z.string().min(1), z.record(z.string().min(1), z.record(z.string().min(1), usdAmountSchema))).optional(),
});

/**
 * Schema of a price override as people write it in config (USD per 1M tokens, USD per tool unit):
 * `{ "models": { "<name>": { "input": 2.5, "cachedInput": 1.25, "output": 10, "contextWindow"?: n,
 * "maxOutput"?: n, "priority"?: {…}, "flex"?: {…}, "audio"?: {…} } }, "fallback"?: {…},
 * "tools"?: {…} }`. Parses to integer micro-USD; rejects negative prices and more than 6 decimals.
 */
export const priceTableOverrideSchema = z.strictObject({
  models: z.record(z.string().min(1), modelPriceOverrideSchema).default({}),
  fallback: modelPriceOverrideSchema.optional(),
  tools: toolPricesOverrideSchema.optional(),
});

/** A parsed price override (integer micro-USD). */
export type PriceTableOverride = z.output<typeof priceTableOverrideSchema>;

function mergeTools(base: ToolPrices, override: PriceTableOverride['tools']): ToolPrices {
  if (override === undefined) return base;
  const images: Record<string, Record<string, Record<string, number>>> = {};
  for (const [model, qualities] of Object.entries({ ...base.imageGeneration, ...override.imageGeneration })) {
    images[model] = Object.fromEntries(Object.entries(qualities).map(([quality, sizes]) => [quality, { ...sizes }]));
  }
  return {
    webSearchCall: override.webSearchCall ?? base.webSearchCall,
    webSearchPreviewCall: override.webSearchPreviewCall ?? base.webSearchPreviewCall,
    fileSearchCall: override.fileSearchCall ?? base.fileSearchCall,
    codeInterpreterContainer: { ...base.codeInterpreterContainer, ...override.codeInterpreterContainer },
    imageGeneration: images,
  };
}

/**
 * The base table with the override's models added or replaced whole (names normalised like
 * {@link resolvePrice} does), its tool prices merged in, and its fallback, if any, replacing the
 * base fallback — else the fallback is the merged table's highest prices.
 */
export function mergePriceTable(base: PriceTable, override: PriceTableOverride): PriceTable {
  const models: Record<string, ModelPrice> = Object.fromEntries([
    ...Object.entries(base.models),
    ...Object.entries(override.models).map(([name, entry]) => [stripProviderPrefix(name), entry] as const),
  ]);
  const explicit = override.fallback !== undefined || base.fallbackExplicit === true;
  return {
    models,
    fallback: override.fallback ?? (base.fallbackExplicit === true ? base.fallback : highestPrices(models)),
    fallbackExplicit: explicit,
    tools: mergeTools(base.tools, override.tools),
    ...(base.source === undefined ? {} : { source: `${base.source}; overridden by config` }),
  };
}
