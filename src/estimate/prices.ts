/**
 * Prices in integer micro-USD per 1M tokens, so money never touches floats: $0.15 / 1M → 150000.
 * A request's cost is Σ tokens × (µUSD per 1M) + Σ tool units × µUSD each × 1e6 — exact integers —
 * divided by 1e6 once, rounding up.
 *
 * Every dimension the API bills has a price, and a price the table lacks is never a silent zero:
 * - `priority` tier missing → the standard price × 5/2 (the highest priority/standard ratio on
 *   OpenAI's priority page, GPT-5.5's); `flex` missing → the standard price (flex never costs more);
 * - audio tokens on a model without audio prices → the table's highest audio prices;
 * - a model not in the table → the config's `fallback`, or the table's highest prices.
 * {@link ResolvedPrice.assumed} says which of these a price relied on, so it can be logged.
 */
import { z } from 'zod';
import { MICROS_PER_USD as USD, usdToMicros } from '../domain/money.js';
import { baseModelOf, stripProviderPrefix, stripSnapshotSuffix } from './models.js';
import { BUILTIN_MODELS, BUILTIN_SOURCE, BUILTIN_TOOLS } from './price-table.js';
import type { ModelPrice, PriceTable, TokenPrices, TokenUsage, ToolCalls, ToolPrices, ToolRates } from './price-types.js';

export type { ModelPrice, PriceTable, TokenUsage, ToolCalls, ToolPrices, ToolRates } from './price-types.js';

/** How {@link resolvePrice} found a price. */
type PriceMatch = 'exact' | 'snapshot' | 'fine-tune-base' | 'fallback';

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
  /** Prices the table lacked for this model and that were filled by the rules above. */
  readonly assumed: readonly PriceAssumption[];
}

/** The priority price of a model without one: the standard price × 5/2, rounded up. */
function scaledForPriority(standard: TokenPrices): TokenPrices {
  const scale = (micros: number): number => Math.ceil((micros * 5) / 2);
  return {
    inputMicroUsdPer1M: scale(standard.inputMicroUsdPer1M),
    cachedInputMicroUsdPer1M: scale(standard.cachedInputMicroUsdPer1M),
    outputMicroUsdPer1M: scale(standard.outputMicroUsdPer1M),
  };
}

function standardOf(price: TokenPrices): TokenPrices {
  return {
    inputMicroUsdPer1M: price.inputMicroUsdPer1M,
    cachedInputMicroUsdPer1M: price.cachedInputMicroUsdPer1M,
    outputMicroUsdPer1M: price.outputMicroUsdPer1M,
  };
}

function maxOf(prices: readonly TokenPrices[]): TokenPrices {
  let input = 0;
  let cached = 0;
  let output = 0;
  for (const p of prices) {
    input = Math.max(input, p.inputMicroUsdPer1M);
    cached = Math.max(cached, p.cachedInputMicroUsdPer1M);
    output = Math.max(output, p.outputMicroUsdPer1M);
  }
  return { inputMicroUsdPer1M: input, cachedInputMicroUsdPer1M: cached, outputMicroUsdPer1M: output };
}

/**
 * The highest price of every dimension over a table's models (each maximum taken on its own):
 * what an unknown model costs by default, so a budget never under-reserves for it.
 */
export function highestPrices(models: Readonly<Record<string, ModelPrice>>): ModelPrice {
  const entries = Object.values(models);
  const audio = entries.flatMap((entry) => (entry.audio === undefined ? [] : [entry.audio]));
  return {
    ...maxOf(entries),
    priority: maxOf(entries.map((entry) => entry.priority ?? scaledForPriority(entry))),
    flex: maxOf(entries.map((entry) => entry.flex ?? entry)),
    ...(audio.length === 0 ? {} : { audio: maxOf(audio) }),
  };
}

/** Audio prices of a model without any when no table is at hand: the built-in table's highest. */
const BUILTIN_HIGHEST_AUDIO: TokenPrices = maxOf(Object.values(BUILTIN_MODELS).flatMap((entry) => (entry.audio ? [entry.audio] : [])));

/** The largest price per image over every image model, quality and size. */
function highestImagePrice(tools: ToolPrices): number {
  let highest = 0;
  for (const qualities of Object.values(tools.imageGeneration)) {
    for (const sizes of Object.values(qualities)) for (const micros of Object.values(sizes)) highest = Math.max(highest, micros);
  }
  return highest;
}

/**
 * The per-unit tool rates of a request whose tools' settings are not known: standard web search,
 * the 1 GB container, the most expensive image.
 */
export function defaultToolRates(tools: ToolPrices): ToolRates {
  return {
    webSearchCall: tools.webSearchCall,
    fileSearchCall: tools.fileSearchCall,
    codeInterpreterContainer: tools.codeInterpreterContainer['1g'] ?? Math.max(0, ...Object.values(tools.codeInterpreterContainer)),
    imageGenerationCall: highestImagePrice(tools),
  };
}

const BUILTIN_TOOL_RATES = defaultToolRates(BUILTIN_TOOLS);

/**
 * The built-in table. Unknown models get the highest price of each dimension in it (see
 * {@link highestPrices}); the ledger flags every request priced so (`price_known = 0`).
 */
export const builtinPriceTable: PriceTable = Object.freeze({
  models: BUILTIN_MODELS,
  fallback: highestPrices(BUILTIN_MODELS),
  fallbackExplicit: false,
  tools: BUILTIN_TOOLS,
  source: BUILTIN_SOURCE,
});

function lookup(table: PriceTable, name: string): ModelPrice | undefined {
  return Object.hasOwn(table.models, name) ? table.models[name] : undefined;
}

/** How to price a model the table does not list. */
export interface ResolveOptions {
  /**
   * Price unknown models at the table's highest prices even when the config set a lower
   * `fallback`: for keys with a budget or a `usd` limit, which must never under-reserve.
   */
  readonly highestForUnknown?: boolean;
}

/**
 * Finds the price of `model`: exact name, then the undated name of a dated snapshot
 * (`gpt-4o-2024-08-06` → `gpt-4o`), with provider prefixes stripped and the base model of a
 * fine-tune (`ft:gpt-4o-mini:org::id`; fine-tunes bill more than their base — override them in the
 * config to be exact). Unknown models get the table's fallback with `known: false`. Tiers and
 * audio prices the entry lacks are filled (see the module comment). Never throws.
 */
export function resolvePrice(model: string, table: PriceTable, options: ResolveOptions = {}): ResolvedPrice {
  // Every request resolves its model's price; the answer only depends on (table, model, options).
  let memo = resolved.get(table);
  if (memo === undefined) {
    memo = new Map();
    resolved.set(table, memo);
  }
  const key = `${options.highestForUnknown === true ? 1 : 0}${model}`;
  let price = memo.get(key);
  if (price === undefined) {
    price = Object.freeze(resolveUncached(model, table, options));
    if (memo.size >= 10_000) memo.clear();
    memo.set(key, price);
  }
  return price;
}

const resolved = new WeakMap<PriceTable, Map<string, ResolvedPrice>>();
const highestByTable = new WeakMap<PriceTable, ModelPrice>();

function highestOf(table: PriceTable): ModelPrice {
  let highest = highestByTable.get(table);
  if (highest === undefined) {
    highest = highestPrices(table.models);
    highestByTable.set(table, highest);
  }
  return highest;
}

function findEntry(stripped: string, table: PriceTable): { entry: ModelPrice; model: string; matchedBy: PriceMatch } | undefined {
  const exact = lookup(table, stripped);
  if (exact) return { entry: exact, model: stripped, matchedBy: 'exact' };
  const undated = stripSnapshotSuffix(stripped);
  const snapshot = lookup(table, undated);
  if (snapshot) return { entry: snapshot, model: undated, matchedBy: 'snapshot' };
  const base = baseModelOf(stripped);
  if (base !== stripped) {
    const key = lookup(table, base) ? base : stripSnapshotSuffix(base);
    const baseEntry = lookup(table, key);
    if (baseEntry) return { entry: baseEntry, model: key, matchedBy: 'fine-tune-base' };
  }
  return undefined;
}

function resolveUncached(model: string, table: PriceTable, options: ResolveOptions): ResolvedPrice {
  const stripped = typeof model === 'string' ? stripProviderPrefix(model) : '';
  const found = findEntry(stripped, table);
  const assumed: PriceAssumption[] = [];
  let entry: ModelPrice;
  if (found === undefined) {
    assumed.push('unknown-model');
    entry = options.highestForUnknown === true && table.fallbackExplicit === true ? highestOf(table) : table.fallback;
  } else {
    entry = found.entry;
  }
  if (entry.priority === undefined) assumed.push('priority');
  if (entry.audio === undefined) assumed.push('audio');
  const highestAudio = highestOf(table).audio ?? BUILTIN_HIGHEST_AUDIO;
  return {
    ...entry,
    priority: entry.priority ?? scaledForPriority(entry),
    flex: entry.flex ?? standardOf(entry),
    audio: entry.audio ?? highestAudio,
    model: found?.model ?? stripped,
    known: found !== undefined,
    matchedBy: found?.matchedBy ?? 'fallback',
    assumed,
  };
}

function sanitizeCount(value: number | undefined): number {
  if (value === undefined || !Number.isFinite(value) || value <= 0) return 0;
  return Math.ceil(value);
}

/** The token prices of the tier the upstream says it used (`priority`, `flex`; else standard). */
function tierPrices(price: ModelPrice, serviceTier: string | undefined): TokenPrices {
  if (serviceTier === 'priority') return price.priority ?? scaledForPriority(price);
  if (serviceTier === 'flex') return price.flex ?? price;
  return price;
}

/**
 * Anthropic's prompt-cache writes, as multiples of the input price (its pricing page, "Prompt
 * caching"): 1.25× for the 5-minute TTL, 2× for the 1-hour TTL; cache reads are the table's
 * cached-input price (0.1× for Claude). Rounded up per 1M tokens, so never below the exact price.
 */
function cacheWrite5mPrice(tier: TokenPrices): number {
  return Math.ceil((tier.inputMicroUsdPer1M * 5) / 4);
}

/** See {@link cacheWrite5mPrice}. */
function cacheWrite1hPrice(tier: TokenPrices): number {
  return tier.inputMicroUsdPer1M * 2;
}

/**
 * Which of a request's dimensions were priced by a rule instead of a listed price (for a log
 * line): a priority answer on a model without priority prices, audio tokens on a model without
 * audio prices, a model not in the table.
 */
export function assumedFor(usage: TokenUsage, price: ResolvedPrice): PriceAssumption[] {
  const used: PriceAssumption[] = [];
  if (price.assumed.includes('unknown-model')) used.push('unknown-model');
  if (usage.serviceTier === 'priority' && price.assumed.includes('priority')) used.push('priority');
  if (sanitizeCount(usage.audioPromptTokens) + sanitizeCount(usage.audioCompletionTokens) > 0 && price.assumed.includes('audio')) used.push('audio');
  return used;
}

/**
 * Cost in integer micro-USD, at the prices of the tier the usage reports.
 * - prompt: cached tokens at the cached price, cache writes at their multiples of the input price
 *   ({@link cacheWrite5mPrice}), audio tokens (not cached) at the audio input price, the rest at
 *   the input price;
 * - completion (reasoning included): audio tokens at the audio output price, the rest at the output
 *   price;
 * - built-in tool calls at `toolRates` (the request's; the standard rates by default).
 * The parts are summed exactly, then divided by 1e6 ONCE with ceiling division — so a request is
 * never billed less than its exact cost, and by at most 1 µUSD more. Falls back to BigInt past
 * 2^53; a result past 2^53 µUSD (9 billion USD) is clamped. Counts that are negative, fractional
 * or not finite are clamped/rounded up, never thrown on: usage comes from upstream and the ledger
 * must always get a number.
 */
export function costMicroUsd(usage: TokenUsage, modelPrice: ModelPrice, toolRates: ToolRates = BUILTIN_TOOL_RATES): number {
  const prompt = sanitizeCount(usage.promptTokens);
  const cached = Math.min(sanitizeCount(usage.cachedTokens), prompt);
  const write1h = Math.min(sanitizeCount(usage.cacheWrite1hTokens), prompt - cached);
  const write5m = Math.min(sanitizeCount(usage.cacheWrite5mTokens), prompt - cached - write1h);
  const audioIn = Math.min(sanitizeCount(usage.audioPromptTokens), prompt - cached - write1h - write5m);
  const textIn = prompt - cached - write1h - write5m - audioIn;
  const completion = sanitizeCount(usage.completionTokens);
  const audioOut = Math.min(sanitizeCount(usage.audioCompletionTokens), completion);
  const textOut = completion - audioOut;
  const long = modelPrice.longContext;
  const tier = long !== undefined && prompt > long.aboveTokens ? long.prices : tierPrices(modelPrice, usage.serviceTier);
  const audio = modelPrice.audio ?? BUILTIN_HIGHEST_AUDIO;
  const calls: ToolCalls = usage.toolCalls ?? {};
  const perMillion: Array<readonly [number, number]> = [
    [textIn, tier.inputMicroUsdPer1M],
    [cached, tier.cachedInputMicroUsdPer1M],
    [write5m, cacheWrite5mPrice(tier)],
    [write1h, cacheWrite1hPrice(tier)],
    [audioIn, audio.inputMicroUsdPer1M],
    [textOut, tier.outputMicroUsdPer1M],
    [audioOut, audio.outputMicroUsdPer1M],
  ];
  const perUnit: Array<readonly [number, number]> = [
    [sanitizeCount(calls.webSearch), toolRates.webSearchCall],
    [sanitizeCount(calls.fileSearch), toolRates.fileSearchCall],
    [sanitizeCount(calls.codeInterpreter), toolRates.codeInterpreterContainer],
    [sanitizeCount(calls.imageGeneration), toolRates.imageGenerationCall],
  ];
  let tokenTotal = 0;
  for (const [count, micros] of perMillion) tokenTotal += count * micros;
  let unitTotal = 0;
  for (const [count, micros] of perUnit) unitTotal += count * micros;
  // Tool units are whole µUSD: × 1e6 so the single division below leaves them whole.
  const total = tokenTotal + unitTotal * USD;
  if (Number.isSafeInteger(tokenTotal) && Number.isSafeInteger(unitTotal) && Number.isSafeInteger(total)) return Math.ceil(total / USD);
  const million = BigInt(USD);
  let exact = 0n;
  for (const [count, micros] of perMillion) exact += BigInt(count) * BigInt(micros);
  for (const [count, micros] of perUnit) exact += BigInt(count) * BigInt(micros) * million;
  const rounded = (exact + million - 1n) / million;
  return rounded > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(rounded);
}

/** What the built-in tool calls of a usage cost on their own (exact: whole µUSD per unit). */
export function toolCostMicroUsd(calls: ToolCalls | undefined, toolRates: ToolRates): number {
  if (calls === undefined) return 0;
  const total =
    sanitizeCount(calls.webSearch) * toolRates.webSearchCall +
    sanitizeCount(calls.fileSearch) * toolRates.fileSearchCall +
    sanitizeCount(calls.codeInterpreter) * toolRates.codeInterpreterContainer +
    sanitizeCount(calls.imageGeneration) * toolRates.imageGenerationCall;
  return Math.min(total, Number.MAX_SAFE_INTEGER);
}

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
