/** Each provider's usage: Gemini's thoughts, OpenRouter's cost; estimates for tokenizers that are not public. */
import { describe, expect, it } from 'vitest';
import { estimateRequestSync } from '../../../src/estimate/index.js';
import { builtinPriceTable } from '../../../src/estimate/prices.js';
import { costOfEnding } from '../../../src/pipeline/settle.js';
import { readUsage, usageFromJsonBytes } from '../../../src/dialects/usage.js';

describe('provider usage', () => {
  it("bills Gemini's thoughts as output: completion is what total_tokens leaves after the prompt", () => {
    // Gemini's OpenAI-compatible endpoint: thoughts in reasoning_tokens and total_tokens, not in completion_tokens.
    const usage = readUsage({ prompt_tokens: 21, completion_tokens: 0, total_tokens: 81, completion_tokens_details: { reasoning_tokens: 60 } });
    expect(usage).toMatchObject({ promptTokens: 21, completionTokens: 60, reasoningTokens: 60 });
    const both = readUsage({ prompt_tokens: 20, completion_tokens: 151, total_tokens: 553, completion_tokens_details: { reasoning_tokens: 382 } });
    expect(both).toMatchObject({ completionTokens: 533, reasoningTokens: 382 });
  });

  it('leaves consistent usage as it is (OpenAI: total = prompt + completion)', () => {
    expect(readUsage({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 })).toMatchObject({ completionTokens: 5 });
    expect(readUsage({ prompt_tokens: 10, completion_tokens: 5 })).toMatchObject({ completionTokens: 5 });
  });

  it("reads OpenRouter's usage.cost (USD) as µUSD, rounded up, and ignores nonsense", () => {
    expect(usageFromJsonBytes(Buffer.from('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"cost":0.0000123}}'))?.reportedCostMicros).toBe(13);
    expect(readUsage({ prompt_tokens: 3, completion_tokens: 4, cost: 0.000012 })?.reportedCostMicros).toBe(12);
    expect(readUsage({ prompt_tokens: 3, completion_tokens: 4, cost: -1 })?.reportedCostMicros).toBeUndefined();
    expect(readUsage({ prompt_tokens: 3, completion_tokens: 4, cost: '0.5' })?.reportedCostMicros).toBeUndefined();
  });

  it('bills the reported cost only where the upstream is trusted to report it', () => {
    const estimate = estimateRequestSync(
      'chat',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      {
        prices: builtinPriceTable,
        defaultMaxCompletionTokens: 100,
      },
    );
    const reported = { promptTokens: 1000, cachedTokens: 0, completionTokens: 1000, reasoningTokens: 0, reportedCostMicros: 7 };
    const base = {
      estimate,
      reported,
      accepted: true,
      upstreamError: false,
      complete: true,
      streamedText: '',
      reservedCompletionTokens: 100,
      countTokens: () => 0,
    };
    expect(costOfEnding({ ...base, useReportedCost: true }).costMicros).toBe(7);
    expect(costOfEnding(base).costMicros).toBe(150 + 600);
  });
});

describe('estimates for models without a public tokenizer', () => {
  const body = { model: 'meta-llama/llama-3.1-8b-instruct', messages: [{ role: 'user', content: 'Count the foxes and the dogs, please.' }] };
  const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 100 };

  it('reserves the prompt at the factor, rounded up, and prices the reservation accordingly', () => {
    const plain = estimateRequestSync('chat', body, options);
    const scaled = estimateRequestSync('chat', body, { ...options, promptTokenFactor: 1.35 });
    expect(scaled.promptTokens).toBe(Math.ceil(plain.promptTokens * 1.35));
    expect(scaled.reservedMicroUsd).toBeGreaterThan(plain.reservedMicroUsd);
    expect(scaled.completionTokensReserved).toBe(plain.completionTokensReserved);
  });
});
