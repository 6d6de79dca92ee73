import fc from 'fast-check';
import { usdToMicros } from '../../../src/domain/money.js';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, costMicroUsd, mergePriceTable, priceTableOverrideSchema, resolvePrice, type ModelPrice } from '../../../src/estimate/index.js';

const gpt4o: ModelPrice = { inputMicroUsdPer1M: 2_500_000, cachedInputMicroUsdPer1M: 1_250_000, outputMicroUsdPer1M: 10_000_000 };

describe('prices resolve by model name', () => {
  it('finds exact names', () => {
    expect(resolvePrice('gpt-4o-mini', builtinPriceTable)).toMatchObject({
      model: 'gpt-4o-mini',
      known: true,
      matchedBy: 'exact',
      inputMicroUsdPer1M: 150_000,
    });
  });

  it('maps dated snapshots to their model unless the snapshot has its own price', () => {
    expect(resolvePrice('gpt-4o-2024-08-06', builtinPriceTable)).toMatchObject({ model: 'gpt-4o', matchedBy: 'snapshot' });
    expect(resolvePrice('gpt-4-0613', builtinPriceTable)).toMatchObject({ model: 'gpt-4', matchedBy: 'snapshot' });
    expect(resolvePrice('gpt-3.5-turbo-0125', builtinPriceTable)).toMatchObject({ model: 'gpt-3.5-turbo' });
    expect(resolvePrice('o3-mini-2025-01-31', builtinPriceTable)).toMatchObject({ model: 'o3-mini' });
    expect(resolvePrice('gpt-4o-2024-05-13', builtinPriceTable)).toMatchObject({
      model: 'gpt-4o-2024-05-13',
      matchedBy: 'exact',
      inputMicroUsdPer1M: 5_000_000,
    });
  });

  it('strips provider prefixes and finds the base model of fine-tunes', () => {
    expect(resolvePrice('openai/gpt-4.1', builtinPriceTable)).toMatchObject({ model: 'gpt-4.1', known: true });
    expect(resolvePrice('azure/gpt-4o-mini', builtinPriceTable)).toMatchObject({ model: 'gpt-4o-mini', known: true });
    expect(resolvePrice('ft:gpt-4o-mini-2024-07-18:acme::abc123', builtinPriceTable)).toMatchObject({ model: 'gpt-4o-mini', matchedBy: 'fine-tune-base' });
  });

  it('prices a name longer than a request may send (from a batch file) the same every time, unremembered', () => {
    const long = `ft:gpt-4o-mini:acme::${'x'.repeat(2_000)}`;
    for (let i = 0; i < 3; i += 1) {
      expect(resolvePrice(long, builtinPriceTable)).toMatchObject({ model: 'gpt-4o-mini', known: true, matchedBy: 'fine-tune-base' });
      expect(resolvePrice(long, builtinPriceTable, { highestForUnknown: true })).toMatchObject({ model: 'gpt-4o-mini', known: true });
    }
  });

  it('gives unknown models the fallback price, flagged unknown', () => {
    expect(resolvePrice('llama-3-70b', builtinPriceTable)).toMatchObject({
      known: false,
      matchedBy: 'fallback',
      inputMicroUsdPer1M: builtinPriceTable.fallback.inputMicroUsdPer1M,
    });
  });

  it('never throws, whatever the name', () => {
    fc.assert(fc.property(fc.string(), (name) => typeof resolvePrice(name, builtinPriceTable).known === 'boolean'));
    expect(resolvePrice('__proto__', builtinPriceTable).known).toBe(false);
    expect(resolvePrice('constructor', builtinPriceTable).known).toBe(false);
  });

  it('stores every built-in price as an integer', () => {
    for (const entry of [...Object.values(builtinPriceTable.models), builtinPriceTable.fallback]) {
      expect(Number.isSafeInteger(entry.inputMicroUsdPer1M)).toBe(true);
      expect(Number.isSafeInteger(entry.cachedInputMicroUsdPer1M)).toBe(true);
      expect(Number.isSafeInteger(entry.outputMicroUsdPer1M)).toBe(true);
    }
  });
});

describe('price overrides', () => {
  it('converts USD per 1M to integer micro-USD exactly', () => {
    expect(usdToMicros(0.15)).toBe(150_000);
    expect(usdToMicros(2.5)).toBe(2_500_000);
    expect(usdToMicros('0.000001')).toBe(1);
    expect(usdToMicros(1e-6)).toBe(1);
    expect(usdToMicros(0.1 + 0.2)).toBeNull(); // 0.30000000000000004 has 17 decimals
    expect(usdToMicros('1.0000001')).toBeNull();
    expect(usdToMicros(1e21)).toBe(1e27);
  });

  it('parses a config override and merges it over the built-in table', () => {
    const override = priceTableOverrideSchema.parse({
      models: { 'OpenAI/my-model': { input: 2.5, cachedInput: 1.25, output: 10, contextWindow: 32_000 }, 'gpt-4o': { input: '3', output: 12 } },
      fallback: { input: 100, output: 100 },
    });
    const table = mergePriceTable(builtinPriceTable, override);
    expect(resolvePrice('my-model', table)).toMatchObject({
      known: true,
      inputMicroUsdPer1M: 2_500_000,
      cachedInputMicroUsdPer1M: 1_250_000,
      contextWindow: 32_000,
    });
    expect(resolvePrice('gpt-4o', table)).toMatchObject({
      inputMicroUsdPer1M: 3_000_000,
      cachedInputMicroUsdPer1M: 3_000_000,
      outputMicroUsdPer1M: 12_000_000,
    });
    expect(resolvePrice('unknown', table).inputMicroUsdPer1M).toBe(100_000_000);
    expect(resolvePrice('gpt-4o-mini', table).known).toBe(true);
  });

  it('rejects more than 6 decimals, negative prices and unknown fields', () => {
    expect(priceTableOverrideSchema.safeParse({ models: { m: { input: 0.0000001, output: 1 } } }).success).toBe(false);
    expect(priceTableOverrideSchema.safeParse({ models: { m: { input: -1, output: 1 } } }).success).toBe(false);
    expect(priceTableOverrideSchema.safeParse({ models: { m: { input: 1, output: 1, outptu: 2 } } }).success).toBe(false);
    expect(priceTableOverrideSchema.safeParse({ models: { m: { input: 1 } } }).success).toBe(false);
  });
});

describe('cost in micro-USD', () => {
  it('bills cached tokens at the cached price and rounds up once', () => {
    // 1000 uncached × 2.5 + 500 cached × 1.25 + 200 × 10 µUSD = 2500 + 625 + 2000 = 5125 µUSD exactly.
    expect(costMicroUsd({ promptTokens: 1500, cachedTokens: 500, completionTokens: 200 }, gpt4o)).toBe(5125);
    // 1 token of gpt-4o-mini input costs 0.15 µUSD: billed as 1.
    expect(costMicroUsd({ promptTokens: 1, completionTokens: 0 }, { ...gpt4o, inputMicroUsdPer1M: 150_000 })).toBe(1);
    // Rounding once: 3 tokens × 0.15 = 0.45 → 1, not 3 × ceil(0.15) = 3.
    expect(costMicroUsd({ promptTokens: 3, completionTokens: 0 }, { ...gpt4o, inputMicroUsdPer1M: 150_000 })).toBe(1);
  });

  it('equals the exact rational cost rounded up, for any usage (BigInt reference)', () => {
    const price = fc.record({
      inputMicroUsdPer1M: fc.integer({ min: 0, max: 200_000_000 }),
      cachedInputMicroUsdPer1M: fc.integer({ min: 0, max: 200_000_000 }),
      outputMicroUsdPer1M: fc.integer({ min: 0, max: 600_000_000 }),
    });
    const usage = fc.record({
      promptTokens: fc.integer({ min: 0, max: 2 ** 40 }),
      cachedTokens: fc.integer({ min: 0, max: 2 ** 40 }),
      completionTokens: fc.integer({ min: 0, max: 2 ** 40 }),
    });
    fc.assert(
      fc.property(usage, price, (u, p) => {
        const cached = BigInt(Math.min(u.cachedTokens, u.promptTokens));
        const exact =
          (BigInt(u.promptTokens) - cached) * BigInt(p.inputMicroUsdPer1M) +
          cached * BigInt(p.cachedInputMicroUsdPer1M) +
          BigInt(u.completionTokens) * BigInt(p.outputMicroUsdPer1M);
        const expected = (exact + 999_999n) / 1_000_000n;
        const cost = costMicroUsd(u, p);
        return Number.isSafeInteger(cost) && BigInt(cost) === (expected > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : expected);
      }),
      { numRuns: 500 },
    );
  });

  it('never decreases when tokens increase', () => {
    fc.assert(
      fc.property(fc.nat(10_000_000), fc.nat(10_000_000), fc.nat(1000), (prompt, completion, extra) => {
        const base = costMicroUsd({ promptTokens: prompt, completionTokens: completion }, gpt4o);
        return (
          costMicroUsd({ promptTokens: prompt + extra, completionTokens: completion }, gpt4o) >= base &&
          costMicroUsd({ promptTokens: prompt, completionTokens: completion + extra }, gpt4o) >= base
        );
      }),
    );
  });

  it('treats odd usage numbers from upstream as billable integers instead of throwing', () => {
    expect(costMicroUsd({ promptTokens: -5, completionTokens: Number.NaN }, gpt4o)).toBe(0);
    expect(costMicroUsd({ promptTokens: 10, cachedTokens: 50, completionTokens: 0 }, gpt4o)).toBe(13);
    expect(costMicroUsd({ promptTokens: 1.2, completionTokens: 0 }, gpt4o)).toBe(5);
  });
});
