/**
 * The rules that fill a price the table lacks, so none is a silent zero: a priority tier at the
 * standard price × 5/2, flex at the standard price, an unknown model at the table's highest price
 * of every dimension, a request's tools at the most expensive rates; and the built-in table
 * completed by them. Resolution (prices.ts) and costing (price-cost.ts) both apply them.
 */
import { BUILTIN_MODELS, BUILTIN_SOURCE, BUILTIN_TOOLS } from './price-table.js';
import type { ModelPrice, PriceTable, TokenPrices, ToolPrices, ToolRates } from './price-types.js';

/** The priority price of a model without one: the standard price × 5/2, rounded up. */
export function scaledForPriority(standard: TokenPrices): TokenPrices {
  const scale = (micros: number): number => Math.ceil((micros * 5) / 2);
  return {
    inputMicroUsdPer1M: scale(standard.inputMicroUsdPer1M),
    cachedInputMicroUsdPer1M: scale(standard.cachedInputMicroUsdPer1M),
    outputMicroUsdPer1M: scale(standard.outputMicroUsdPer1M),
  };
}

export function standardOf(price: TokenPrices): TokenPrices {
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
export const BUILTIN_HIGHEST_AUDIO: TokenPrices = maxOf(Object.values(BUILTIN_MODELS).flatMap((entry) => (entry.audio ? [entry.audio] : [])));

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
  // Every request asks; the answer depends on the table alone (a config's table never changes).
  let rates = toolRatesByTable.get(tools);
  if (rates === undefined) {
    rates = Object.freeze({
      webSearchCall: tools.webSearchCall,
      fileSearchCall: tools.fileSearchCall,
      codeInterpreterContainer: tools.codeInterpreterContainer['1g'] ?? Math.max(0, ...Object.values(tools.codeInterpreterContainer)),
      imageGenerationCall: highestImagePrice(tools),
    });
    toolRatesByTable.set(tools, rates);
  }
  return rates;
}

const toolRatesByTable = new WeakMap<ToolPrices, ToolRates>();

export const BUILTIN_TOOL_RATES = defaultToolRates(BUILTIN_TOOLS);

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

/**
 * What becomes of a request for a model the price table lacks (TOLLGATE_UNKNOWN_MODELS):
 * `refuse-capped` refuses it for keys with a budget or a `usd` limit and prices it at the
 * fallback for the rest; `fallback` prices it at the fallback for every key (the table's highest
 * prices for capped keys); `refuse` refuses it for every key.
 */
export const UNKNOWN_MODEL_MODES = ['refuse-capped', 'fallback', 'refuse'] as const;
export type UnknownModelMode = (typeof UNKNOWN_MODEL_MODES)[number];

/**
 * Whether a request for an unpriced model is refused, given the mode and whether its key has a
 * budget or a `usd` limit (`capped`). A guessed price would let a capped key's reservation be
 * wildly wrong (the highest price reserves hundreds of times a small model's cost), so a price
 * is required there unless the operator opts into the fallback.
 */
export function refusesUnpricedModel(mode: UnknownModelMode, capped: boolean): boolean {
  return mode === 'refuse' || (mode === 'refuse-capped' && capped);
}
