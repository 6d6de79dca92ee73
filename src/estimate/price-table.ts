/**
 * The built-in prices, written in USD as OpenAI's pricing pages show them so a reviewer can hold
 * each row against its source; {@link usd} turns them into integer micro-USD once, at load.
 */
import { MICROS_PER_USD } from '../domain/money.js';
import type { ModelPrice, TokenPrices, ToolPrices } from './price-types.js';

/** USD → integer µUSD. Math.round only removes binary noise (0.15 * 1e6): every price has ≤ 6 decimals. */
function usd(amount: number): number {
  return Math.round(amount * MICROS_PER_USD);
}

/** USD per 1M tokens: input / cached input (`null` = no cache discount) / output. */
function tokens(input: number, cachedInput: number | null, output: number): TokenPrices {
  return { inputMicroUsdPer1M: usd(input), cachedInputMicroUsdPer1M: usd(cachedInput ?? input), outputMicroUsdPer1M: usd(output) };
}

interface Extras {
  readonly window?: number;
  readonly maxOutput?: number;
  readonly priority?: TokenPrices;
  readonly flex?: TokenPrices;
  readonly audio?: TokenPrices;
}

function price(input: number, cachedInput: number | null, output: number, extras: Extras = {}): ModelPrice {
  return {
    ...tokens(input, cachedInput, output),
    ...(extras.window === undefined ? {} : { contextWindow: extras.window }),
    ...(extras.maxOutput === undefined ? {} : { maxOutputTokens: extras.maxOutput }),
    ...(extras.priority === undefined ? {} : { priority: extras.priority }),
    ...(extras.flex === undefined ? {} : { flex: extras.flex }),
    ...(extras.audio === undefined ? {} : { audio: extras.audio }),
  };
}

/** Flex is billed at the Batch API's rates: half the standard price, cached input included. */
function flexHalf(input: number, cachedInput: number, output: number): TokenPrices {
  return tokens(input / 2, cachedInput / 2, output / 2);
}

const W400K = { window: 400_000, maxOutput: 128_000 };

/**
 * A Claude model: input / output in USD per 1M tokens, cache reads at 0.1× input unless given
 * (long-context cache reads at the same multiple); cache writes
 * are priced from the input price (1.25× for 5 minutes, 2× for 1 hour: prices.ts). No context
 * window is set: most Claude 4 models take 1M tokens with a beta header, and a window that is
 * too small would refuse valid requests.
 */
function claude(
  input: number,
  output: number,
  maxOutput: number | undefined,
  longContext?: { input: number; output: number; above?: number },
  cacheRead = input / 10,
): ModelPrice {
  const longCached = longContext === undefined ? 0 : (longContext.input * cacheRead) / input;
  return {
    ...price(input, cacheRead, output, maxOutput === undefined ? {} : { maxOutput }),
    ...(longContext === undefined
      ? {}
      : { longContext: { aboveTokens: longContext.above ?? 200_000, prices: tokens(longContext.input, longCached, longContext.output) } }),
  };
}

/** Sonnet 4 and 4.5 bill a prompt over 200k tokens (1M-context beta) at $6 / $22.50 per 1M, every token of the request. */
const SONNET_LONG = { input: 6, output: 22.5 };

/**
 * Claude models, Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing,
 * "Model pricing" and "Long context pricing"), read 2026-11-22 through stored copies of the page.
 * Rows marked UNCONFIRMED were not on the copies of Anthropic's page at hand and come from
 * third-party summaries of it (2026-03/04): check them against the page and override them in
 * the config's `prices` if they differ. Dated snapshots (`claude-sonnet-4-5-20250929`) find
 * their row through the undated name (models.ts).
 */
const CLAUDE_MODELS: ReadonlyArray<readonly [string, ModelPrice]> = [
  // Cache hits of the 5.1 models are $0.25 (0.025× input).
  ['claude-fable-5-1', claude(10, 50, undefined, undefined, 0.25)],
  ['claude-mythos-5-1', claude(10, 50, undefined, undefined, 0.25)],
  ['claude-fable-5', claude(10, 50, undefined)],
  ['claude-mythos-5', claude(10, 50, undefined)],
  // UNCONFIRMED: Opus 5.5, Sonnet 5.5 / 5 and Haiku 5.5 from third-party summaries of the page
  // (2026-10): cache hits 0.05× on the 5.5 models (Sonnet 5.5: $0.10 since 2026-10-07), and Haiku
  // 5.5 billing a prompt over 100k tokens at $0.50 / $2.50.
  ['claude-opus-5-5', claude(4, 20, undefined, undefined, 0.2)],
  ['claude-opus-5', claude(5, 25, undefined)],
  ['claude-sonnet-5-5', claude(2, 10, undefined, undefined, 0.1)],
  ['claude-sonnet-5', claude(2, 10, undefined)],
  ['claude-haiku-5-5', claude(0.1, 0.5, undefined, { input: 0.5, output: 2.5, above: 100_000 })],
  ['claude-opus-4-8', claude(5, 25, undefined)],
  ['claude-opus-4-7', claude(5, 25, undefined)],
  ['claude-opus-4-6', claude(5, 25, 128_000)],
  ['claude-opus-4-5', claude(5, 25, 64_000)],
  ['claude-opus-4-1', claude(15, 75, 32_000)],
  ['claude-opus-4', claude(15, 75, 32_000)],
  ['claude-opus-4-0', claude(15, 75, 32_000)],
  // UNCONFIRMED: Sonnet 4.6 at Sonnet 4.5's prices, and with its long-context prices (an upper bound).
  ['claude-sonnet-4-6', claude(3, 15, 64_000, SONNET_LONG)],
  // UNCONFIRMED: Sonnet 4.5 at $3 / $15 (third-party summaries; Sonnet 4's row on Anthropic's page).
  ['claude-sonnet-4-5', claude(3, 15, 64_000, SONNET_LONG)],
  ['claude-sonnet-4', claude(3, 15, 64_000, SONNET_LONG)],
  ['claude-sonnet-4-0', claude(3, 15, 64_000, SONNET_LONG)],
  ['claude-3-7-sonnet', claude(3, 15, 64_000)],
  ['claude-3-7-sonnet-latest', claude(3, 15, 64_000)],
  // UNCONFIRMED: Haiku 4.5 at $1 / $5 (third-party summaries).
  ['claude-haiku-4-5', claude(1, 5, 64_000)],
  ['claude-3-5-haiku', claude(0.8, 4, 8_192)],
  ['claude-3-5-haiku-latest', claude(0.8, 4, 8_192)],
  // Haiku 3's cache reads are $0.03 (not 0.1×); its 5-minute writes ($0.30) bill here at 1.25× ($0.3125).
  ['claude-3-haiku', price(0.25, 0.03, 1.25, { maxOutput: 4_096 })],
];

/**
 * Built-in model prices (USD per 1M tokens: input / cached input / output).
 * - Standard tier: taken 2026-04-13 from OpenAI's pricing page as summarised by benchlm.ai
 *   ("OpenAI API Pricing: GPT-5.4, GPT-5.2, and GPT-5.1", April 2026) for the GPT-5.x rows, GPT-5.5
 *   from the api-evangelist/openai plans file (read of developers.openai.com/api/docs/pricing,
 *   2026-05-04), older models from OpenAI's model pages / pricing page (2025).
 * - `priority`: openai.com/api-priority-processing, read 2026-11-22 ("excludes long context").
 * - `flex`: OpenAI's Flex processing guide (2025-04-17; half the standard price, as Batch), for
 *   the models it lists; read 2026-11-22.
 * - `audio` (USD per 1M audio tokens, input / cached input / output): OpenAI's pricing page,
 *   "Audio tokens" and "Realtime API" sections (2025), read 2026-11-22.
 * Context windows and output limits are OpenAI's model pages; left out where unsure, because a
 * wrong window would reject valid requests.
 */
export const BUILTIN_MODELS: Readonly<Record<string, ModelPrice>> = Object.freeze(
  Object.fromEntries([
    ['gpt-5.5', price(5, 0.5, 30, { priority: tokens(12.5, 1.25, 75), flex: flexHalf(5, 0.5, 30) })],
    ['gpt-5.5-pro', price(30, null, 180)],
    ['gpt-5.4', price(2.5, 0.25, 15, { priority: tokens(5, 0.5, 30), flex: flexHalf(2.5, 0.25, 15) })],
    ['gpt-5.4-mini', price(0.75, 0.075, 4.5, { priority: tokens(1.5, 0.15, 9), flex: flexHalf(0.75, 0.075, 4.5) })],
    ['gpt-5.4-nano', price(0.2, 0.02, 1.25, { flex: flexHalf(0.2, 0.02, 1.25) })],
    ['gpt-5.2', price(1.75, 0.175, 14, { ...W400K, priority: tokens(3.5, 0.35, 28), flex: flexHalf(1.75, 0.175, 14) })],
    ['gpt-5.2-pro', price(21, null, 168, W400K)],
    ['gpt-5.1', price(1.25, 0.125, 10, { ...W400K, priority: tokens(2.5, 0.25, 20), flex: flexHalf(1.25, 0.125, 10) })],
    ['gpt-5', price(1.25, 0.125, 10, { ...W400K, priority: tokens(2.5, 0.25, 20), flex: flexHalf(1.25, 0.125, 10) })],
    ['gpt-5-mini', price(0.25, 0.025, 2, { ...W400K, priority: tokens(0.45, 0.045, 3.6), flex: flexHalf(0.25, 0.025, 2) })],
    ['gpt-5-nano', price(0.05, 0.005, 0.4, { ...W400K, flex: flexHalf(0.05, 0.005, 0.4) })],
    ['gpt-5-pro', price(15, null, 120, { window: 400_000, maxOutput: 272_000 })],
    ['gpt-5-chat-latest', price(1.25, 0.125, 10, { window: 128_000, maxOutput: 16_384 })],
    ['gpt-4.1', price(2, 0.5, 8, { window: 1_047_576, maxOutput: 32_768, priority: tokens(3.5, 0.875, 14) })],
    ['gpt-4.1-mini', price(0.4, 0.1, 1.6, { window: 1_047_576, maxOutput: 32_768, priority: tokens(0.7, 0.175, 2.8) })],
    ['gpt-4.1-nano', price(0.1, 0.025, 0.4, { window: 1_047_576, maxOutput: 32_768, priority: tokens(0.2, 0.05, 0.8) })],
    ['gpt-4.5-preview', price(75, 37.5, 150, { window: 128_000, maxOutput: 16_384 })],
    ['gpt-4o', price(2.5, 1.25, 10, { window: 128_000, maxOutput: 16_384, priority: tokens(4.25, 2.125, 17) })],
    ['gpt-4o-2024-05-13', price(5, null, 15, { window: 128_000, maxOutput: 4_096, priority: tokens(8.75, null, 26.25) })],
    ['gpt-4o-mini', price(0.15, 0.075, 0.6, { window: 128_000, maxOutput: 16_384, priority: tokens(0.25, 0.125, 1) })],
    // Chat Completions search models: tokens here, plus one web search call per request (price-request.ts).
    ['gpt-4o-search-preview', price(2.5, null, 10, { window: 128_000, maxOutput: 16_384 })],
    ['gpt-4o-mini-search-preview', price(0.15, null, 0.6, { window: 128_000, maxOutput: 16_384 })],
    ['chatgpt-4o-latest', price(5, null, 15, { window: 128_000, maxOutput: 16_384 })],
    ['o1', price(15, 7.5, 60, { window: 200_000, maxOutput: 100_000 })],
    ['o1-pro', price(150, null, 600, { window: 200_000, maxOutput: 100_000 })],
    ['o1-mini', price(1.1, 0.55, 4.4, { window: 128_000, maxOutput: 65_536 })],
    ['o3', price(2, 0.5, 8, { window: 200_000, maxOutput: 100_000, priority: tokens(3.5, 0.875, 14), flex: flexHalf(2, 0.5, 8) })],
    ['o3-pro', price(20, null, 80, { window: 200_000, maxOutput: 100_000 })],
    ['o3-mini', price(1.1, 0.55, 4.4, { window: 200_000, maxOutput: 100_000 })],
    ['o4-mini', price(1.1, 0.275, 4.4, { window: 200_000, maxOutput: 100_000, priority: tokens(2, 0.5, 8), flex: tokens(0.55, 0.138, 2.2) })],
    ['gpt-4-turbo', price(10, null, 30, { window: 128_000, maxOutput: 4_096 })],
    ['gpt-4-turbo-preview', price(10, null, 30, { window: 128_000, maxOutput: 4_096 })],
    ['gpt-4-1106-preview', price(10, null, 30, { window: 128_000, maxOutput: 4_096 })],
    ['gpt-4-0125-preview', price(10, null, 30, { window: 128_000, maxOutput: 4_096 })],
    ['gpt-4', price(30, null, 60, { window: 8_192, maxOutput: 8_192 })],
    ['gpt-4-32k', price(60, null, 120, { window: 32_768, maxOutput: 32_768 })],
    ['gpt-3.5-turbo', price(0.5, null, 1.5, { window: 16_385, maxOutput: 4_096 })],
    ['gpt-3.5-turbo-instruct', price(1.5, null, 2, { window: 4_096, maxOutput: 4_096 })],
    // Audio models: text tokens at the top level, audio tokens under `audio`.
    ['gpt-4o-audio-preview', price(2.5, null, 10, { window: 128_000, maxOutput: 16_384, audio: tokens(40, null, 80) })],
    ['gpt-4o-mini-audio-preview', price(0.15, null, 0.6, { window: 128_000, maxOutput: 16_384, audio: tokens(10, null, 20) })],
    ['gpt-audio', price(2.5, null, 10, { window: 128_000, maxOutput: 16_384, audio: tokens(32, null, 64) })],
    ['gpt-audio-mini', price(0.6, null, 2.4, { window: 128_000, maxOutput: 16_384, audio: tokens(10, null, 20) })],
    ['gpt-realtime', price(4, 0.4, 16, { audio: tokens(32, 0.4, 64) })],
    ['gpt-realtime-mini', price(0.6, 0.06, 2.4, { audio: tokens(10, 0.3, 20) })],
    ['gpt-4o-realtime-preview', price(5, 2.5, 20, { audio: tokens(40, 2.5, 80) })],
    ['gpt-4o-mini-realtime-preview', price(0.6, 0.3, 2.4, { audio: tokens(10, 0.3, 20) })],
    // Speech models bill text in, audio out (tts) or audio in, text out (transcribe); the unused
    // direction repeats the used one so no token of theirs is ever priced at zero.
    ['gpt-4o-mini-tts', price(0.6, null, 12, { audio: tokens(12, null, 12) })],
    ['gpt-4o-transcribe', price(2.5, null, 10, { audio: tokens(6, null, 10) })],
    ['gpt-4o-mini-transcribe', price(1.25, null, 5, { audio: tokens(3, null, 5) })],
    ['text-embedding-3-small', price(0.02, null, 0, { window: 8_191 })],
    ['text-embedding-3-large', price(0.13, null, 0, { window: 8_191 })],
    ['text-embedding-ada-002', price(0.1, null, 0, { window: 8_191 })],
    ...CLAUDE_MODELS,
  ]),
);

/** Image sizes and their price per image, low / medium / high quality. */
function images(low: [number, number], medium: [number, number], high: [number, number]): Record<string, Record<string, number>> {
  const bySize = ([square, tall]: [number, number]) => ({ '1024x1024': usd(square), '1024x1536': usd(tall), '1536x1024': usd(tall) });
  return { low: bySize(low), medium: bySize(medium), high: bySize(high) };
}

/**
 * Built-in tool prices, OpenAI's pricing page ("Built-in tools" and "Image generation"), read
 * 2026-11-22 through modelcostwatch.com's tool pages (checked 2026-03-12) and OpenAI's community
 * forum: web search $10 / 1k calls ($25 / 1k for `web_search_preview` on non-reasoning models),
 * file search $2.50 / 1k calls, Code Interpreter $0.03 per 1 GB container session (4 GB $0.12,
 * 16 GB $0.48, 64 GB $1.92; per-minute billing since 2026-06-02 never exceeds the 20-minute price
 * for one session), images per image (gpt-image-1: 1024² $0.011 / $0.042 / $0.167, larger
 * $0.016 / $0.063 / $0.25; gpt-image-1-mini: $0.005 / $0.011 / $0.036, larger $0.006 / $0.015 /
 * $0.052). Search content tokens are part of the response's usage and billed there.
 */
export const BUILTIN_TOOLS: ToolPrices = Object.freeze({
  webSearchCall: usd(0.01),
  webSearchPreviewCall: usd(0.025),
  fileSearchCall: usd(0.0025),
  codeInterpreterContainer: { '1g': usd(0.03), '4g': usd(0.12), '16g': usd(0.48), '64g': usd(1.92) },
  imageGeneration: {
    'gpt-image-1': images([0.011, 0.016], [0.042, 0.063], [0.167, 0.25]),
    'gpt-image-1-mini': images([0.005, 0.006], [0.011, 0.015], [0.036, 0.052]),
  },
});

export const BUILTIN_SOURCE =
  "OpenAI pricing page (GPT-5.x via benchlm.ai summary 2026-04-13, older models 2025); priority, flex, audio and tools read 2026-11-22; Claude models from Anthropic's pricing page read 2026-11-22";
