/**
 * Prices in integer micro-USD per 1M tokens, so money never touches floats: $0.15 / 1M → 150000.
 * A request's cost is Σ tokens × (µUSD per 1M) — exact integers — divided by 1e6 once, rounding up.
 */
import { z } from 'zod';
import { MICROS_PER_USD as USD, usdToMicros } from '../money.js';
import { baseModelOf, stripProviderPrefix, stripSnapshotSuffix } from './models.js';

/** One model's price and limits. Prices are integer micro-USD per 1M tokens. */
export interface ModelPrice {
  readonly inputMicroUsdPer1M: number;
  /** Price of prompt tokens served from the prompt cache (equal to input where there is none). */
  readonly cachedInputMicroUsdPer1M: number;
  readonly outputMicroUsdPer1M: number;
  /** Prompt + completion tokens the model accepts, when known. */
  readonly contextWindow?: number;
  /** Largest completion the model produces, when known. */
  readonly maxOutputTokens?: number;
}

/** Prices by model name (lower-case, no provider prefix), plus the price of unknown models. */
export interface PriceTable {
  readonly models: Readonly<Record<string, ModelPrice>>;
  readonly fallback: ModelPrice;
  /** Where and when the prices were taken, for humans. */
  readonly source?: string;
}

/** How {@link resolvePrice} found a price. */
type PriceMatch = 'exact' | 'snapshot' | 'fine-tune-base' | 'fallback';

/** A price resolved for a request's model; `known: false` means the fallback was used. */
export interface ResolvedPrice extends ModelPrice {
  /** The table entry used (the request's normalised name when the fallback was used). */
  readonly model: string;
  readonly known: boolean;
  readonly matchedBy: PriceMatch;
}

/** Token usage to price. `cachedTokens` are part of `promptTokens`; reasoning is part of completion. */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly cachedTokens?: number;
  readonly completionTokens: number;
}

function price(input: number, cachedInput: number | null, output: number, contextWindow?: number, maxOutputTokens?: number): ModelPrice {
  // Entries below are written in USD per 1M tokens for review against the pricing page; Math.round
  // only removes binary noise (0.15 * 1e6) — every listed price has at most 6 decimals.
  const toMicro = (usd: number): number => Math.round(usd * USD);
  return {
    inputMicroUsdPer1M: toMicro(input),
    cachedInputMicroUsdPer1M: toMicro(cachedInput ?? input),
    outputMicroUsdPer1M: toMicro(output),
    ...(contextWindow === undefined ? {} : { contextWindow }),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
  };
}

/**
 * Built-in prices (standard tier, USD per 1M tokens: input / cached input / output).
 * Taken 2026-04-13 from OpenAI's pricing page as summarised by benchlm.ai ("OpenAI API Pricing:
 * GPT-5.4, GPT-5.2, and GPT-5.1", April 2026) for the GPT-5.x rows, and from OpenAI's published
 * model pages / pricing page (2025) for the older rows. `null` cached price = no cache discount.
 * Context windows and output limits are OpenAI's model pages; left out where unsure, because a
 * wrong window would reject valid requests.
 */
const BUILTIN_MODELS: Record<string, ModelPrice> = Object.fromEntries([
  ['gpt-5.4', price(2.5, 0.25, 15)],
  ['gpt-5.4-mini', price(0.75, 0.075, 4.5)],
  ['gpt-5.4-nano', price(0.2, 0.02, 1.25)],
  ['gpt-5.2', price(1.75, 0.175, 14, 400_000, 128_000)],
  ['gpt-5.2-pro', price(21, null, 168, 400_000, 128_000)],
  ['gpt-5.1', price(1.25, 0.125, 10, 400_000, 128_000)],
  ['gpt-5', price(1.25, 0.125, 10, 400_000, 128_000)],
  ['gpt-5-mini', price(0.25, 0.025, 2, 400_000, 128_000)],
  ['gpt-5-nano', price(0.05, 0.005, 0.4, 400_000, 128_000)],
  ['gpt-5-pro', price(15, null, 120, 400_000, 272_000)],
  ['gpt-5-chat-latest', price(1.25, 0.125, 10, 128_000, 16_384)],
  ['gpt-4.1', price(2, 0.5, 8, 1_047_576, 32_768)],
  ['gpt-4.1-mini', price(0.4, 0.1, 1.6, 1_047_576, 32_768)],
  ['gpt-4.1-nano', price(0.1, 0.025, 0.4, 1_047_576, 32_768)],
  ['gpt-4.5-preview', price(75, 37.5, 150, 128_000, 16_384)],
  ['gpt-4o', price(2.5, 1.25, 10, 128_000, 16_384)],
  ['gpt-4o-2024-05-13', price(5, null, 15, 128_000, 4_096)],
  ['gpt-4o-mini', price(0.15, 0.075, 0.6, 128_000, 16_384)],
  ['chatgpt-4o-latest', price(5, null, 15, 128_000, 16_384)],
  ['o1', price(15, 7.5, 60, 200_000, 100_000)],
  ['o1-pro', price(150, null, 600, 200_000, 100_000)],
  ['o1-mini', price(1.1, 0.55, 4.4, 128_000, 65_536)],
  ['o3', price(2, 0.5, 8, 200_000, 100_000)],
  ['o3-pro', price(20, null, 80, 200_000, 100_000)],
  ['o3-mini', price(1.1, 0.55, 4.4, 200_000, 100_000)],
  ['o4-mini', price(1.1, 0.275, 4.4, 200_000, 100_000)],
  ['gpt-4-turbo', price(10, null, 30, 128_000, 4_096)],
  ['gpt-4-turbo-preview', price(10, null, 30, 128_000, 4_096)],
  ['gpt-4-1106-preview', price(10, null, 30, 128_000, 4_096)],
  ['gpt-4-0125-preview', price(10, null, 30, 128_000, 4_096)],
  ['gpt-4', price(30, null, 60, 8_192, 8_192)],
  ['gpt-4-32k', price(60, null, 120, 32_768, 32_768)],
  ['gpt-3.5-turbo', price(0.5, null, 1.5, 16_385, 4_096)],
  ['gpt-3.5-turbo-instruct', price(1.5, null, 2, 4_096, 4_096)],
  ['text-embedding-3-small', price(0.02, null, 0, 8_191)],
  ['text-embedding-3-large', price(0.13, null, 0, 8_191)],
  ['text-embedding-ada-002', price(0.1, null, 0, 8_191)],
]);

/**
 * The built-in table. The fallback (unknown models) is gpt-4o's price: a mid-range guess that
 * neither blocks cheap models nor lets an expensive unknown one through for free; the ledger
 * flags every request priced with it (`known: false`). Override it in the config.
 */
export const builtinPriceTable: PriceTable = Object.freeze({
  models: Object.freeze(BUILTIN_MODELS),
  fallback: price(2.5, 1.25, 10),
  source: 'OpenAI pricing page (GPT-5.x via benchlm.ai summary, 2026-04-13; older models 2025)',
});

function lookup(table: PriceTable, name: string): ModelPrice | undefined {
  return Object.hasOwn(table.models, name) ? table.models[name] : undefined;
}

/**
 * Finds the price of `model`: exact name, then the undated name of a dated snapshot
 * (`gpt-4o-2024-08-06` → `gpt-4o`), with provider prefixes stripped and the base model of a
 * fine-tune (`ft:gpt-4o-mini:org::id`; fine-tunes bill more than their base — override them in the
 * config to be exact). Unknown models get the table's fallback with `known: false`. Never throws.
 */
export function resolvePrice(model: string, table: PriceTable): ResolvedPrice {
  // Every request resolves its model's price; the answer only depends on (table, model).
  let memo = resolved.get(table);
  if (memo === undefined) {
    memo = new Map();
    resolved.set(table, memo);
  }
  let price = memo.get(model);
  if (price === undefined) {
    price = Object.freeze(resolveUncached(model, table));
    if (memo.size >= 10_000) memo.clear();
    memo.set(model, price);
  }
  return price;
}

const resolved = new WeakMap<PriceTable, Map<string, ResolvedPrice>>();

function resolveUncached(model: string, table: PriceTable): ResolvedPrice {
  const stripped = typeof model === 'string' ? stripProviderPrefix(model) : '';
  const exact = lookup(table, stripped);
  if (exact) return { ...exact, model: stripped, known: true, matchedBy: 'exact' };
  const undated = stripSnapshotSuffix(stripped);
  const snapshot = lookup(table, undated);
  if (snapshot) return { ...snapshot, model: undated, known: true, matchedBy: 'snapshot' };
  const base = baseModelOf(stripped);
  if (base !== stripped) {
    const baseExact = lookup(table, base) ?? lookup(table, stripSnapshotSuffix(base));
    if (baseExact) {
      const key = lookup(table, base) ? base : stripSnapshotSuffix(base);
      return { ...baseExact, model: key, known: true, matchedBy: 'fine-tune-base' };
    }
  }
  return { ...table.fallback, model: stripped, known: false, matchedBy: 'fallback' };
}

function sanitizeTokens(value: number | undefined): number {
  if (value === undefined || !Number.isFinite(value) || value <= 0) return 0;
  return Math.ceil(value);
}

/**
 * Cost in integer micro-USD. Cached tokens are part of `promptTokens` and billed at the cached
 * price, the rest of the prompt at the input price; reasoning tokens are part of
 * `completionTokens`. The parts are summed exactly as tokens × µUSD-per-1M, then divided by 1e6
 * ONCE with ceiling division — so a request is never billed less than its exact cost, and by at
 * most 1 µUSD more. Falls back to BigInt past 2^53; a result past 2^53 µUSD (9 billion USD) is
 * clamped. Token counts that are negative, fractional or not finite are clamped/rounded up, never
 * thrown on: usage comes from upstream and the ledger must always get a number.
 */
export function costMicroUsd(usage: TokenUsage, modelPrice: ModelPrice): number {
  const prompt = sanitizeTokens(usage.promptTokens);
  const cached = Math.min(sanitizeTokens(usage.cachedTokens), prompt);
  const completion = sanitizeTokens(usage.completionTokens);
  const uncached = prompt - cached;
  const total = uncached * modelPrice.inputMicroUsdPer1M + cached * modelPrice.cachedInputMicroUsdPer1M + completion * modelPrice.outputMicroUsdPer1M;
  if (Number.isSafeInteger(total)) return Math.ceil(total / USD);
  const exact =
    BigInt(uncached) * BigInt(modelPrice.inputMicroUsdPer1M) +
    BigInt(cached) * BigInt(modelPrice.cachedInputMicroUsdPer1M) +
    BigInt(completion) * BigInt(modelPrice.outputMicroUsdPer1M);
  const million = BigInt(USD);
  const rounded = (exact + million - 1n) / million;
  return rounded > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(rounded);
}

/** Largest price we accept in an override: $1,000,000 per 1M tokens. */
const MAX_USD_PER_1M = 1_000_000;

const usdPer1MSchema = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const micro = typeof value === 'number' && (!Number.isFinite(value) || value < 0) ? null : usdToMicros(value);
  if (micro === null || micro > MAX_USD_PER_1M * USD) {
    ctx.addIssue({
      code: 'custom',
      message: 'expected a non-negative USD amount per 1M tokens with at most 6 decimals',
    });
    return z.NEVER;
  }
  return micro;
});

const modelPriceOverrideSchema = z
  .strictObject({
    /** USD per 1M input tokens. */
    input: usdPer1MSchema,
    /** USD per 1M cached input tokens; defaults to `input` (no cache discount). */
    cachedInput: usdPer1MSchema.optional(),
    /** USD per 1M output tokens. */
    output: usdPer1MSchema,
    /** Prompt + completion tokens the model accepts. */
    contextWindow: z.number().int().positive().optional(),
    /** Largest completion the model produces. */
    maxOutput: z.number().int().positive().optional(),
  })
  .transform((entry): ModelPrice => ({
    inputMicroUsdPer1M: entry.input,
    cachedInputMicroUsdPer1M: entry.cachedInput ?? entry.input,
    outputMicroUsdPer1M: entry.output,
    ...(entry.contextWindow === undefined ? {} : { contextWindow: entry.contextWindow }),
    ...(entry.maxOutput === undefined ? {} : { maxOutputTokens: entry.maxOutput }),
  }));

/**
 * Schema of a price override as people write it in config (USD per 1M tokens):
 * `{ "models": { "<name>": { "input": 2.5, "cachedInput": 1.25, "output": 10,
 * "contextWindow"?: n, "maxOutput"?: n } }, "fallback"?: {…} }`. Parses to integer micro-USD;
 * rejects negative prices and more than 6 decimals.
 */
export const priceTableOverrideSchema = z.strictObject({
  models: z.record(z.string().min(1), modelPriceOverrideSchema).default({}),
  fallback: modelPriceOverrideSchema.optional(),
});

/** A parsed price override (integer micro-USD per 1M tokens). */
export type PriceTableOverride = z.output<typeof priceTableOverrideSchema>;

/**
 * The base table with the override's models added or replaced (names normalised like
 * {@link resolvePrice} does) and its fallback, if any, replacing the base fallback.
 */
export function mergePriceTable(base: PriceTable, override: PriceTableOverride): PriceTable {
  const models = Object.fromEntries([
    ...Object.entries(base.models),
    ...Object.entries(override.models).map(([name, entry]) => [stripProviderPrefix(name), entry] as const),
  ]);
  return {
    models,
    fallback: override.fallback ?? base.fallback,
    ...(base.source === undefined ? {} : { source: `${base.source}; overridden by config` }),
  };
}
