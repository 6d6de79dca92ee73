/** Reading Anthropic's Admin API reports into cells: cents as decimal strings, token types as kinds, cache writes by TTL. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { centsToMicros, costLine, usageLine } from '../../../src/reconcile/anthropic.js';
import { normalizeModel } from '../../../src/reconcile/compare.js';

describe("Anthropic's cost report", () => {
  it('reads cents as decimal strings to the micro-dollar', () => {
    expect(centsToMicros('123.45')).toBe(1_234_500);
    expect(centsToMicros('0.0001')).toBe(1);
    expect(centsToMicros(2.5)).toBe(25_000);
    expect(centsToMicros('not money')).toBe(0);
    expect(centsToMicros(null)).toBe(0);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000_000 }), (micros) => {
        expect(centsToMicros((micros / 10_000).toFixed(4))).toBe(micros);
      }),
    );
  });

  it('maps each token type to a kind, and lines without a model to other', () => {
    const line = (tokenType: string | null, model: string | null = 'claude-sonnet-4-5-20250929') =>
      costLine({ description: 'd', amount: '1', currency: 'USD', cost_type: tokenType === null ? 'web_search' : 'tokens', model, token_type: tokenType });
    expect(line('uncached_input_tokens').kind).toBe('input');
    expect(line('cache_read_input_tokens').kind).toBe('cached_input');
    expect(line('cache_creation.ephemeral_5m_input_tokens').kind).toBe('cache_write_5m');
    expect(line('cache_creation.ephemeral_1h_input_tokens').kind).toBe('cache_write_1h');
    expect(line('output_tokens')).toEqual({ project: null, lineItem: 'd', model: 'claude-sonnet-4-5-20250929', kind: 'output', costMicros: 10_000 });
    expect(line(null, null)).toMatchObject({ model: null, kind: 'other' });
    expect(line('uncached_input_tokens', null).kind).toBe('other');
  });
});

describe("Anthropic's usage report", () => {
  it('counts cache reads and both cache writes in the input, and batch tokens apart', () => {
    const cell = usageLine({
      model: 'claude-haiku-4-5-20251001',
      uncached_input_tokens: 100,
      cache_read_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 8, ephemeral_1h_input_tokens: 5 },
      output_tokens: 40,
      service_tier: 'batch',
    });
    expect(cell).toEqual({
      model: 'claude-haiku-4-5-20251001',
      project: null,
      requests: 0,
      inputTokens: 143,
      cachedInputTokens: 30,
      cacheWrite5mTokens: 8,
      cacheWrite1hTokens: 5,
      outputTokens: 40,
      batch: true,
    });
    expect(usageLine({ model: 'm' })).toMatchObject({ inputTokens: 0, outputTokens: 0, batch: false });
  });

  it("compares Anthropic's dated snapshots under the requested name", () => {
    expect(normalizeModel('claude-sonnet-4-5-20250929')).toBe('claude-sonnet-4-5');
    expect(normalizeModel('gpt-4o-mini-2024-07-18')).toBe('gpt-4o-mini');
    expect(normalizeModel('claude-sonnet-4-5')).toBe('claude-sonnet-4-5');
  });
});
