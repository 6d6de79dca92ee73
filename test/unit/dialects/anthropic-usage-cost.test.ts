/**
 * Anthropic's usage priced: cache reads at the cached price (0.1× for Claude), 5-minute cache
 * writes at 1.25× and 1-hour writes at 2× the input price, output at the output price, and
 * Sonnet's long-context prices for a prompt over 200k tokens — held against the prices as
 * Anthropic's page writes them (USD per 1M tokens), computed here by hand.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/prices.js';
import { readAnthropicUsage } from '../../../src/dialects/anthropic-usage.js';

/** USD per 1M: input, 5m write, 1h write, cache read, output — Anthropic's pricing table. */
const PAGE: Record<string, readonly [number, number, number, number, number]> = {
  'claude-fable-5-1': [10, 12.5, 20, 0.25, 50],
  'claude-opus-4-6': [5, 6.25, 10, 0.5, 25],
  'claude-opus-4-1-20250805': [15, 18.75, 30, 1.5, 75],
  'claude-sonnet-4-20250514': [3, 3.75, 6, 0.3, 15],
  'claude-3-5-haiku-20241022': [0.8, 1, 1.6, 0.08, 4],
  'claude-haiku-4-5-20251001': [1, 1.25, 2, 0.1, 5],
};

/** Exact cost in µUSD, rounded up once: Σ tokens × USD/1M (as integers of µUSD/1M) / 1e6. */
function byHand(model: string, t: { input: number; w5m: number; w1h: number; read: number; output: number }): number {
  const [input, w5m, w1h, read, output] = PAGE[model]!.map((usd) => Math.round(usd * 1_000_000));
  return Math.ceil((t.input * input! + t.w5m * w5m! + t.w1h * w1h! + t.read * read! + t.output * output!) / 1_000_000);
}

describe('Anthropic usage and its cost', () => {
  it('reads the whole prompt: input + cache reads + writes split by TTL (unnamed writes are 5-minute)', () => {
    expect(
      readAnthropicUsage({
        input_tokens: 7,
        cache_creation_input_tokens: 50,
        cache_read_input_tokens: 100,
        cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 30 },
        output_tokens: 9,
        server_tool_use: { web_search_requests: 2 },
      }),
    ).toEqual({
      promptTokens: 7 + 100 + 20 + 30,
      cachedTokens: 100,
      completionTokens: 9,
      reasoningTokens: 0,
      cacheWrite5mTokens: 20,
      cacheWrite1hTokens: 30,
      toolCalls: { webSearch: 2 },
    });
    expect(readAnthropicUsage({ input_tokens: 3, cache_creation_input_tokens: 4, output_tokens: 1 })).toMatchObject({ promptTokens: 7, cacheWrite5mTokens: 4 });
    expect(readAnthropicUsage({ output_tokens: 3 })).toBeUndefined();
    expect(readAnthropicUsage({ input_tokens: 0, output_tokens: 0 })).toEqual({ promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 });
  });

  it('prices every part at its multiple of the input price, to the micro-dollar, for any usage', () => {
    const count = fc.integer({ min: 0, max: 2_000_000 });
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(PAGE)), count, count, count, count, count, (model, input, w5m, w1h, read, output) => {
        // Below the long-context threshold for the models that have one.
        fc.pre(input + w5m + w1h + read <= 200_000 || !model.startsWith('claude-sonnet-4'));
        const usage = readAnthropicUsage({
          input_tokens: input,
          cache_creation_input_tokens: w5m + w1h,
          cache_read_input_tokens: read,
          cache_creation: { ephemeral_5m_input_tokens: w5m, ephemeral_1h_input_tokens: w1h },
          output_tokens: output,
        })!;
        const price = resolvePrice(model, builtinPriceTable);
        expect(price.known).toBe(true);
        expect(costMicroUsd(usage, price)).toBe(byHand(model, { input, w5m, w1h, read, output }));
      }),
    );
  });

  it("bills Sonnet 4's prompts over 200k tokens at its long-context prices, every token of the request", () => {
    const price = resolvePrice('claude-sonnet-4-20250514', builtinPriceTable);
    const at = (prompt: number) => costMicroUsd({ promptTokens: prompt, cachedTokens: 0, completionTokens: 1_000 }, price);
    expect(at(200_000)).toBe(200_000 * 3 + 1_000 * 15);
    expect(at(200_001)).toBe(Math.ceil(200_001 * 6 + 1_000 * 22.5));
    // Cache reads count toward the threshold and bill at the long-context cached price (0.1 × $6).
    expect(costMicroUsd({ promptTokens: 250_000, cachedTokens: 100_000, completionTokens: 0 }, price)).toBe(150_000 * 6 + Math.ceil(100_000 * 0.6));
  });
});
