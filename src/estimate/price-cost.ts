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
  const { perMillion, perUnit } = pricedParts(usage, modelPrice, toolRates);
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

/** A usage's priced parts: tokens at µUSD per 1M, tool units at whole µUSD each. */
interface PricedParts {
  /** Text input, cached input, 5-minute and 1-hour cache writes, audio input, text output, audio output. */
  readonly perMillion: ReadonlyArray<readonly [number, number]>;
  /** Web search, file search, code interpreter containers, image generation calls. */
  readonly perUnit: ReadonlyArray<readonly [number, number]>;
}

function pricedParts(usage: TokenUsage, modelPrice: ModelPrice, toolRates: ToolRates): PricedParts {
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
  return { perMillion, perUnit };
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
  const [textIn, cached, write5m, write1h, audioIn, textOut, audioOut] = pricedParts(usage, modelPrice, BUILTIN_TOOL_RATES).perMillion.map(
    ([count, micros]) => (count * micros) / USD,
  );
  return {
    input: Math.floor(textIn!),
    cachedInput: Math.floor(cached!),
    cacheWrites: Math.floor(write5m! + write1h!),
    audioInput: Math.floor(audioIn!),
    output: Math.floor(textOut!),
    audioOutput: Math.floor(audioOut!),
  };
}
