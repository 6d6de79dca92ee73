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
 *
 * This module finds a model's price ({@link resolvePrice}) and is the one entry importers use; the
 * rules that fill missing prices are in price-fallbacks.ts, the cost of a usage in price-cost.ts,
 * the config file's overrides in price-overrides.ts, the built-in data in price-table.ts.
 */
import { baseModelOf, rememberByName, stripProviderPrefix, stripSnapshotSuffix } from './models.js';
import { BUILTIN_HIGHEST_AUDIO, highestPrices, scaledForPriority, standardOf } from './price-fallbacks.js';
import type { ModelPrice, PriceAssumption, PriceMatch, PriceTable, ResolvedPrice } from './price-types.js';

// The rest of pricing, from its own modules: importers know this one entry.
export type { ModelPrice, PriceAssumption, PriceTable, ResolvedPrice, ToolRates } from './price-types.js';
export { builtinPriceTable, defaultToolRates, highestPrices, refusesUnpricedModel, UNKNOWN_MODEL_MODES, type UnknownModelMode } from './price-fallbacks.js';
export { assumedFor, costMicroUsd, costParts, toolCostMicroUsd } from './price-cost.js';
export { mergePriceTable, priceTableOverrideSchema } from './price-overrides.js';

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
  // One map per option, keyed by the name itself: a key built by concatenation is a new string to hash each time.
  let memos = resolved.get(table);
  if (memos === undefined) {
    memos = [new Map(), new Map()];
    resolved.set(table, memos);
  }
  const memo = memos[options.highestForUnknown === true ? 1 : 0];
  let price = memo.get(model);
  if (price === undefined) {
    price = Object.freeze(resolveUncached(model, table, options));
    rememberByName(memo, model, price);
  }
  return price;
}

const resolved = new WeakMap<PriceTable, [Map<string, ResolvedPrice>, Map<string, ResolvedPrice>]>();
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
