/**
 * Every dimension the API bills has a price: service tier, audio tokens, built-in tool calls,
 * reasoning (as output). Costs are hand-computed from the table's listed prices; the properties
 * hold for any prices: exact, rounded up once, never negative, monotone in every dimension.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assumedFor,
  builtinPriceTable,
  costMicroUsd,
  highestPrices,
  mergePriceTable,
  priceTableOverrideSchema,
  resolvePrice,
  toolCostMicroUsd,
  type ModelPrice,
  type ToolRates,
} from '../../../src/estimate/prices.js';

const table = builtinPriceTable;
const rates: ToolRates = { webSearchCall: 10_000, fileSearchCall: 2_500, codeInterpreterContainer: 30_000, imageGenerationCall: 250_000 };

describe('the service tier the upstream used', () => {
  it('bills priority at the priority price and flex at the flex price', () => {
    const gpt5 = resolvePrice('gpt-5', table);
    const usage = { promptTokens: 1_000, cachedTokens: 200, completionTokens: 500 };
    // Standard: 800 × $1.25 + 200 × $0.125 + 500 × $10 per 1M = 1000 + 25 + 5000 µUSD.
    expect(costMicroUsd(usage, gpt5)).toBe(6_025);
    // Priority: 800 × $2.50 + 200 × $0.25 + 500 × $20 = 2000 + 50 + 10000.
    expect(costMicroUsd({ ...usage, serviceTier: 'priority' }, gpt5)).toBe(12_050);
    // Flex: half the standard price.
    expect(costMicroUsd({ ...usage, serviceTier: 'flex' }, gpt5)).toBe(3_013); // 3012.5 rounded up once
    // Any other tier name (default, auto, scale) is the standard price.
    expect(costMicroUsd({ ...usage, serviceTier: 'default' }, gpt5)).toBe(6_025);
    expect(costMicroUsd({ ...usage, serviceTier: 'scale' }, gpt5)).toBe(6_025);
  });

  it('prices priority at the standard price × 5/2 where the table has none, and flex at the standard price', () => {
    const o1 = resolvePrice('o1', table);
    expect(o1.assumed).toContain('priority');
    // o1: $15 / $60 standard → $37.50 / $150 priority.
    expect(costMicroUsd({ promptTokens: 1_000, completionTokens: 1_000, serviceTier: 'priority' }, o1)).toBe(37_500 + 150_000);
    expect(costMicroUsd({ promptTokens: 1_000, completionTokens: 1_000, serviceTier: 'flex' }, o1)).toBe(15_000 + 60_000);
    expect(assumedFor({ promptTokens: 1, completionTokens: 1, serviceTier: 'priority' }, o1)).toEqual(['priority']);
    expect(assumedFor({ promptTokens: 1, completionTokens: 1, serviceTier: 'default' }, o1)).toEqual([]);
  });
});

describe('audio tokens', () => {
  it('bills audio prompt and completion tokens at the model audio prices, the rest at text prices', () => {
    const audio = resolvePrice('gpt-4o-audio-preview', table);
    expect(audio.assumed).not.toContain('audio');
    // Prompt 1000 (300 audio): 700 × $2.50 + 300 × $40; completion 2000 (1500 audio): 500 × $10 + 1500 × $80.
    const cost = costMicroUsd({ promptTokens: 1_000, completionTokens: 2_000, audioPromptTokens: 300, audioCompletionTokens: 1_500 }, audio);
    expect(cost).toBe(1_750 + 12_000 + 5_000 + 120_000);
  });

  it('bills audio on a model without audio prices at the highest audio prices of the table, and says so', () => {
    const gpt4o = resolvePrice('gpt-4o', table);
    expect(gpt4o.audio).toEqual(highestPrices(table.models).audio);
    // Highest built-in audio: $40 in / $80 out (gpt-4o-audio-preview, gpt-4o-realtime-preview).
    expect(costMicroUsd({ promptTokens: 100, completionTokens: 100, audioPromptTokens: 100, audioCompletionTokens: 100 }, gpt4o)).toBe(4_000 + 8_000);
    expect(assumedFor({ promptTokens: 100, completionTokens: 100, audioCompletionTokens: 1 }, gpt4o)).toEqual(['audio']);
  });

  it('never bills more audio tokens than the prompt or completion holds', () => {
    const audio = resolvePrice('gpt-audio', table);
    expect(costMicroUsd({ promptTokens: 10, completionTokens: 10, audioPromptTokens: 50, audioCompletionTokens: 50 }, audio)).toBe(
      costMicroUsd({ promptTokens: 10, completionTokens: 10, audioPromptTokens: 10, audioCompletionTokens: 10 }, audio),
    );
  });
});

describe('built-in tool calls', () => {
  it('bills each call, container and image at the rates given, in whole micro-dollars', () => {
    const gpt41 = resolvePrice('gpt-4.1', table);
    const calls = { webSearch: 2, fileSearch: 3, codeInterpreter: 1, imageGeneration: 1 };
    const tokens = costMicroUsd({ promptTokens: 1_000, completionTokens: 100 }, gpt41);
    expect(tokens).toBe(2_000 + 800);
    expect(toolCostMicroUsd(calls, rates)).toBe(20_000 + 7_500 + 30_000 + 250_000);
    expect(costMicroUsd({ promptTokens: 1_000, completionTokens: 100, toolCalls: calls }, gpt41, rates)).toBe(tokens + 307_500);
  });

  it('uses the standard tool prices when no rates are given', () => {
    // $10 / 1k web search calls = 10 000 µUSD per call.
    expect(costMicroUsd({ promptTokens: 0, completionTokens: 0, toolCalls: { webSearch: 3 } }, resolvePrice('gpt-5', table))).toBe(30_000);
  });
});

describe('reasoning tokens', () => {
  it('are billed as the output they are part of', () => {
    const o3 = resolvePrice('o3', table);
    // 20 000 completion tokens, 19 000 of them reasoning: all 20 000 at $8 / 1M.
    expect(costMicroUsd({ promptTokens: 0, completionTokens: 20_000 }, o3)).toBe(160_000);
  });
});

describe('unknown models', () => {
  it('get the highest price of every dimension in the table by default', () => {
    const unknown = resolvePrice('llama-3-70b', table);
    expect(unknown).toMatchObject({ known: false, matchedBy: 'fallback', assumed: expect.arrayContaining(['unknown-model']) });
    const everyModel = Object.values(table.models);
    expect(unknown.inputMicroUsdPer1M).toBe(Math.max(...everyModel.map((m) => m.inputMicroUsdPer1M)));
    expect(unknown.outputMicroUsdPer1M).toBe(Math.max(...everyModel.map((m) => m.outputMicroUsdPer1M)));
    for (const model of everyModel) {
      const usage = { promptTokens: 1_000, completionTokens: 1_000 };
      expect(costMicroUsd(usage, unknown)).toBeGreaterThanOrEqual(costMicroUsd(usage, model));
    }
  });

  it('get a configured fallback, except for keys that must never under-reserve', () => {
    const configured = mergePriceTable(table, priceTableOverrideSchema.parse({ fallback: { input: 0.1, output: 0.2 } }));
    expect(configured.fallbackExplicit).toBe(true);
    expect(resolvePrice('my-llama', configured).inputMicroUsdPer1M).toBe(100_000);
    const strict = resolvePrice('my-llama', configured, { highestForUnknown: true });
    expect(strict.inputMicroUsdPer1M).toBe(table.fallback.inputMicroUsdPer1M);
    expect(strict.known).toBe(false);
    // A known model is priced the same either way.
    expect(resolvePrice('gpt-4o', configured, { highestForUnknown: true })).toEqual(resolvePrice('gpt-4o', configured));
  });

  it('follow a model added by the config: the highest prices are those of the merged table', () => {
    const dear = mergePriceTable(table, priceTableOverrideSchema.parse({ models: { 'very-dear': { input: 900, output: 2000 } } }));
    expect(dear.fallbackExplicit).toBe(false);
    expect(resolvePrice('who-knows', dear)).toMatchObject({ inputMicroUsdPer1M: 900_000_000, outputMicroUsdPer1M: 2_000_000_000 });
  });
});

describe('the override schema', () => {
  it('takes tier, audio and tool prices in USD and stores integer micro-USD', () => {
    const override = priceTableOverrideSchema.parse({
      models: {
        'my-voice': {
          input: 1,
          output: 4,
          priority: { input: 2, output: 8 },
          flex: { input: '0.5', cachedInput: 0.05, output: 2 },
          audio: { input: 20, output: 40 },
        },
      },
      tools: { webSearchCall: 0.02, codeInterpreterContainer: { '1g': 0.05 }, imageGeneration: { 'my-image': { high: { '1024x1024': 0.3 } } } },
    });
    const merged = mergePriceTable(table, override);
    expect(resolvePrice('my-voice', merged)).toMatchObject({
      priority: { inputMicroUsdPer1M: 2_000_000, cachedInputMicroUsdPer1M: 2_000_000, outputMicroUsdPer1M: 8_000_000 },
      flex: { inputMicroUsdPer1M: 500_000, cachedInputMicroUsdPer1M: 50_000, outputMicroUsdPer1M: 2_000_000 },
      audio: { inputMicroUsdPer1M: 20_000_000, outputMicroUsdPer1M: 40_000_000 },
      assumed: [],
    });
    expect(merged.tools.webSearchCall).toBe(20_000);
    expect(merged.tools.fileSearchCall).toBe(table.tools.fileSearchCall);
    expect(merged.tools.codeInterpreterContainer).toMatchObject({ '1g': 50_000, '4g': 120_000 });
    expect(merged.tools.imageGeneration['my-image']).toEqual({ high: { '1024x1024': 300_000 } });
    expect(merged.tools.imageGeneration['gpt-image-1']).toEqual(table.tools.imageGeneration['gpt-image-1']);
  });

  it('rejects negative, over-precise or misspelled tier, audio and tool prices', () => {
    const bad = [
      { models: { m: { input: 1, output: 1, priority: { input: -1, output: 1 } } } },
      { models: { m: { input: 1, output: 1, audio: { input: 1 } } } },
      { models: { m: { input: 1, output: 1, audoi: { input: 1, output: 1 } } } },
      { tools: { webSearchCall: 0.0000001 } },
      { tools: { webSearch: 0.01 } },
    ];
    for (const value of bad) expect(priceTableOverrideSchema.safeParse(value).success, JSON.stringify(value)).toBe(false);
  });
});

/** Usage built from disjoint parts, so "more of one part" is a well-defined change. */
interface Parts {
  textIn: number;
  cached: number;
  audioIn: number;
  textOut: number;
  audioOut: number;
  web: number;
  file: number;
  containers: number;
  images: number;
}

function usageOf(p: Parts, serviceTier: string) {
  return {
    promptTokens: p.textIn + p.cached + p.audioIn,
    cachedTokens: p.cached,
    audioPromptTokens: p.audioIn,
    completionTokens: p.textOut + p.audioOut,
    audioCompletionTokens: p.audioOut,
    serviceTier,
    toolCalls: { webSearch: p.web, fileSearch: p.file, codeInterpreter: p.containers, imageGeneration: p.images },
  };
}

const tokenPrices = fc.record({
  inputMicroUsdPer1M: fc.integer({ min: 0, max: 200_000_000 }),
  cachedInputMicroUsdPer1M: fc.integer({ min: 0, max: 200_000_000 }),
  outputMicroUsdPer1M: fc.integer({ min: 0, max: 600_000_000 }),
});
const modelPrice: fc.Arbitrary<ModelPrice> = fc
  .record({ standard: tokenPrices, priority: tokenPrices, flex: tokenPrices, audio: tokenPrices })
  .map(({ standard, priority, flex, audio }) => ({ ...standard, priority, flex, audio }));
const toolRates: fc.Arbitrary<ToolRates> = fc.record({
  webSearchCall: fc.integer({ min: 0, max: 1_000_000 }),
  fileSearchCall: fc.integer({ min: 0, max: 1_000_000 }),
  codeInterpreterContainer: fc.integer({ min: 0, max: 10_000_000 }),
  imageGenerationCall: fc.integer({ min: 0, max: 10_000_000 }),
});
const count = fc.integer({ min: 0, max: 2 ** 36 });
const parts: fc.Arbitrary<Parts> = fc.record({
  textIn: count,
  cached: count,
  audioIn: count,
  textOut: count,
  audioOut: count,
  web: fc.nat(10_000),
  file: fc.nat(10_000),
  containers: fc.nat(100),
  images: fc.nat(100),
});
const tier = fc.constantFrom('default', 'priority', 'flex', 'auto');

describe('cost properties over every dimension', () => {
  it('equals the exact rational cost rounded up once (BigInt reference), never negative', () => {
    fc.assert(
      fc.property(parts, modelPrice, toolRates, tier, (p, price, rates, serviceTier) => {
        const t = serviceTier === 'priority' ? price.priority! : serviceTier === 'flex' ? price.flex! : price;
        const a = price.audio!;
        const exact =
          BigInt(p.textIn) * BigInt(t.inputMicroUsdPer1M) +
          BigInt(p.cached) * BigInt(t.cachedInputMicroUsdPer1M) +
          BigInt(p.audioIn) * BigInt(a.inputMicroUsdPer1M) +
          BigInt(p.textOut) * BigInt(t.outputMicroUsdPer1M) +
          BigInt(p.audioOut) * BigInt(a.outputMicroUsdPer1M) +
          (BigInt(p.web) * BigInt(rates.webSearchCall) +
            BigInt(p.file) * BigInt(rates.fileSearchCall) +
            BigInt(p.containers) * BigInt(rates.codeInterpreterContainer) +
            BigInt(p.images) * BigInt(rates.imageGenerationCall)) *
            1_000_000n;
        const rounded = (exact + 999_999n) / 1_000_000n;
        const expected = rounded > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : rounded;
        const cost = costMicroUsd(usageOf(p, serviceTier), price, rates);
        return Number.isSafeInteger(cost) && cost >= 0 && BigInt(cost) === expected;
      }),
      { numRuns: 500 },
    );
  });

  it('never decreases when any one dimension grows', () => {
    const keys: Array<keyof Parts> = ['textIn', 'cached', 'audioIn', 'textOut', 'audioOut', 'web', 'file', 'containers', 'images'];
    fc.assert(
      fc.property(
        parts,
        modelPrice,
        toolRates,
        tier,
        fc.constantFrom(...keys),
        fc.integer({ min: 1, max: 1_000_000 }),
        (p, price, rates, serviceTier, key, extra) => {
          const before = costMicroUsd(usageOf(p, serviceTier), price, rates);
          const after = costMicroUsd(usageOf({ ...p, [key]: p[key] + extra }, serviceTier), price, rates);
          return after >= before;
        },
      ),
      { numRuns: 500 },
    );
  });

  it('bills the built-in table the same whichever way a usage spells a standard tier', () => {
    fc.assert(
      fc.property(parts, fc.constantFrom(...Object.keys(table.models)), (p, model) => {
        const price = resolvePrice(model, table);
        const standard = costMicroUsd(usageOf(p, 'default'), price);
        return costMicroUsd(usageOf(p, 'auto'), price) === standard && costMicroUsd({ ...usageOf(p, 'x'), serviceTier: undefined }, price) === standard;
      }),
      { numRuns: 200 },
    );
  });

  it('charges priority at least the standard price for every built-in model', () => {
    fc.assert(
      fc.property(parts, fc.constantFrom(...Object.keys(table.models)), (p, model) => {
        const price = resolvePrice(model, table);
        return costMicroUsd(usageOf(p, 'priority'), price) >= costMicroUsd(usageOf(p, 'default'), price);
      }),
      { numRuns: 200 },
    );
  });
});
