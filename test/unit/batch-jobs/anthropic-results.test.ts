/**
 * What a line of a Message Batch's results bills (src/batch-jobs/follower.ts): a succeeded
 * request its message's usage at the batch price — cache reads and writes apart, as the
 * Messages dialect reads them — and every other result nothing.
 */
import { describe, expect, it } from 'vitest';
import { anthropicResult } from '../../../src/batch-jobs/follower.js';
import { batchPriceOf } from '../../../src/batches/batch-estimate.js';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { BUILTIN_TOOL_RATES } from '../../../src/estimate/price-fallbacks.js';

const price = batchPriceOf(resolvePrice('claude-opus-4-6', builtinPriceTable));
const succeeded = (usage: Record<string, unknown>) =>
  JSON.stringify({ custom_id: 'q-1', result: { type: 'succeeded', message: { id: 'msg_1', type: 'message', usage } } });

describe('anthropicResult', () => {
  it("bills a succeeded request's whole prompt, cache reads and 5-minute and 1-hour writes at their own prices, at the batch price", () => {
    const line = succeeded({
      input_tokens: 10,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
      output_tokens: 7,
      service_tier: 'batch',
    });
    const result = anthropicResult(line, price, BUILTIN_TOOL_RATES)!;
    expect(result.usage).toMatchObject({ promptTokens: 140, cachedTokens: 100, cacheWrite5mTokens: 20, cacheWrite1hTokens: 10, completionTokens: 7 });
    // Opus 4.6 at half price, µUSD per token: input 2.5, cache read 0.25, 5m write 3.125, 1h write 5, output 12.5.
    expect(result.costMicros).toBe(Math.ceil(10 * 2.5 + 100 * 0.25 + 20 * 3.125 + 10 * 5 + 7 * 12.5));
    expect(result.costMicros).toBe(costMicroUsd(result.usage!, price));
  });

  it('bills nothing for errored, canceled and expired requests, and says how they ended', () => {
    for (const type of ['errored', 'canceled', 'expired']) {
      expect(anthropicResult(JSON.stringify({ custom_id: 'q', result: { type } }), price, BUILTIN_TOOL_RATES)).toEqual({ type, costMicros: 0 });
    }
  });

  it('skips blank lines and lines that are not results; flags a succeeded request without usage', () => {
    expect(anthropicResult('', price, BUILTIN_TOOL_RATES)).toBeUndefined();
    expect(anthropicResult('{not json', price, BUILTIN_TOOL_RATES)).toBeUndefined();
    expect(anthropicResult('[1]', price, BUILTIN_TOOL_RATES)).toBeUndefined();
    expect(anthropicResult(succeeded({}), price, BUILTIN_TOOL_RATES)).toEqual({ type: 'succeeded_without_usage', costMicros: 0 });
  });
});
