/**
 * What a usage costs, in integer micro-USD: every token dimension at its tier's price (cache reads
 * and writes, audio, long context included) and every built-in tool call at its rate, summed
 * exactly and divided once, rounding up — and which of those prices were assumed by rule.
 */
import { MICROS_PER_USD as USD } from '../domain/money.js';
import { BUILTIN_HIGHEST_AUDIO, BUILTIN_TOOL_RATES, scaledForPriority } from './price-fallbacks.js';
import type { ModelPrice, PriceAssumption, ResolvedPrice, TokenPrices, TokenUsage, ToolCalls, ToolRates } from './price-types.js';

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
export function cacheWrite5mPrice(tier: TokenPrices): number {
  return Math.ceil((tier.inputMicroUsdPer1M * 5) / 4);
}

/** See {@link cacheWrite5mPrice}. */
export function cacheWrite1hPrice(tier: TokenPrices): number {
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
  pricedParts(usage, modelPrice, toolRates);
  let tokenTotal = 0;
  for (let i = 0; i < TOKEN_PARTS; i++) tokenTotal += (partCounts[i] as number) * (partPrices[i] as number);
  let unitTotal = 0;
  for (let i = TOKEN_PARTS; i < ALL_PARTS; i++) unitTotal += (partCounts[i] as number) * (partPrices[i] as number);
  // Tool units are whole µUSD: × 1e6 so the single division below leaves them whole.
  const total = tokenTotal + unitTotal * USD;
  if (Number.isSafeInteger(tokenTotal) && Number.isSafeInteger(unitTotal) && Number.isSafeInteger(total)) return Math.ceil(total / USD);
  const million = BigInt(USD);
  let exact = 0n;
  for (let i = 0; i < ALL_PARTS; i++) {
    const part = BigInt(partCounts[i] as number) * BigInt(partPrices[i] as number);
    exact += i < TOKEN_PARTS ? part : part * million;
  }
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

/**
 * A usage's priced parts, as counts and prices at the same index: first the tokens, at µUSD per 1M
 * (text input, cached input, 5-minute and 1-hour cache writes, audio input, text output, audio
 * output), then the tool units, at whole µUSD each (web search, file search, code interpreter
 * containers, image generation calls). Written by {@link pricedParts} and read right after it,
 * within one synchronous call: a cost is computed 4–5 times a request, and arrays of pairs were
 * the largest single allocation of a request (docs/performance.md, "What a request allocates").
 * Float64Array holds every count and price exactly, as a number does.
 */
const TOKEN_PARTS = 7;
const ALL_PARTS = TOKEN_PARTS + 4;
const partCounts = new Float64Array(ALL_PARTS);
const partPrices = new Float64Array(ALL_PARTS);

const NO_CALLS: ToolCalls = {};

function setPart(index: number, count: number, price: number): void {
  partCounts[index] = count;
  partPrices[index] = price;
}

function pricedParts(usage: TokenUsage, modelPrice: ModelPrice, toolRates: ToolRates): void {
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
  const calls: ToolCalls = usage.toolCalls ?? NO_CALLS;
  setPart(0, textIn, tier.inputMicroUsdPer1M);
  setPart(1, cached, tier.cachedInputMicroUsdPer1M);
  setPart(2, write5m, cacheWrite5mPrice(tier));
  setPart(3, write1h, cacheWrite1hPrice(tier));
  setPart(4, audioIn, audio.inputMicroUsdPer1M);
  setPart(5, textOut, tier.outputMicroUsdPer1M);
  setPart(6, audioOut, audio.outputMicroUsdPer1M);
  setPart(7, sanitizeCount(calls.webSearch), toolRates.webSearchCall);
  setPart(8, sanitizeCount(calls.fileSearch), toolRates.fileSearchCall);
  setPart(9, sanitizeCount(calls.codeInterpreter), toolRates.codeInterpreterContainer);
  setPart(10, sanitizeCount(calls.imageGeneration), toolRates.imageGenerationCall);
}

/** What each part of a usage costs on its own, µUSD rounded down (the whole, {@link costMicroUsd}, rounds up once). */
export interface CostParts {
  readonly input: number;
  readonly cachedInput: number;
  readonly cacheWrites: number;
  readonly audioInput: number;
  /** Text output, reasoning included. */
  readonly output: number;
  readonly audioOutput: number;
}

/** The parts of {@link costMicroUsd}, at the same prices (tier, long context, audio), each rounded down. */
export function costParts(usage: TokenUsage, modelPrice: ModelPrice): CostParts {
  pricedParts(usage, modelPrice, BUILTIN_TOOL_RATES);
  const part = (index: number): number => ((partCounts[index] as number) * (partPrices[index] as number)) / USD;
  return {
    input: Math.floor(part(0)),
    cachedInput: Math.floor(part(1)),
    cacheWrites: Math.floor(part(2) + part(3)),
    audioInput: Math.floor(part(4)),
    output: Math.floor(part(5)),
    audioOutput: Math.floor(part(6)),
  };
}
