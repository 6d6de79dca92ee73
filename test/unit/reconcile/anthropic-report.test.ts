/**
 * Reading Anthropic's Admin API reports into cells (cents as decimal strings, token types as
 * kinds, cache writes by TTL), and comparing a report that counts no requests.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { centsToMicros, costLine, usageLine } from '../../../src/reconcile/anthropic.js';
import { compareWithProvider, normalizeModel } from '../../../src/reconcile/compare.js';
import type { ProviderCostCell } from '../../../src/reconcile/provider.js';

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

describe('a report without request counts, with cache writes and batches', () => {
  const SONNET = { inputMicroUsdPer1M: 3_000_000, cachedInputMicroUsdPer1M: 300_000, outputMicroUsdPer1M: 15_000_000 };
  const options = {
    provider: 'anthropic',
    since: '2026-11-01',
    until: '2026-11-01',
    generatedAt: 0,
    byProject: false,
    tolerancePercent: 1,
    priceOf: () => SONNET,
  };
  // 700 uncached × $3 + 100 reads × $0.30 + 200 5-minute writes × $3.75 + 100 output × $15, per 1M.
  const ledger = {
    day: '2026-11-01',
    model: 'claude-sonnet-4-5',
    project: null,
    requests: 3,
    inputTokens: 1000,
    cachedInputTokens: 100,
    cacheWriteTokens: 200,
    outputTokens: 100,
  };
  const usage = { ...ledger, model: 'claude-sonnet-4-5-20250929', requests: 0, cacheWrite5mTokens: 200, cacheWrite1hTokens: 0 };
  const cost = (kind: ProviderCostCell['kind'], costMicros: number): ProviderCostCell => ({
    day: '2026-11-01',
    project: null,
    lineItem: kind,
    model: 'claude-sonnet-4-5-20250929',
    kind,
    costMicros,
  });
  const costs = (factor: number) => [
    cost('input', 2100 * factor),
    cost('cached_input', 30 * factor),
    cost('cache_write_5m', 750 * factor),
    cost('output', 1500 * factor),
  ];

  it('agrees without comparing requests, and flags nothing', () => {
    const report = compareWithProvider([{ ...ledger, costMicros: 4380 }], { usage: [usage], costs: costs(1), requestsCounted: false }, options);
    expect(report.rows.map((row) => [row.model, row.status])).toEqual([['claude-sonnet-4-5', 'match']]);
    expect(report.priceFlags).toEqual([]);
  });

  it('names cache writes the ledger lacks', () => {
    const more = { ...usage, inputTokens: 1100, cacheWrite5mTokens: 300 };
    const report = compareWithProvider(
      [{ ...ledger, costMicros: 4380 }],
      { usage: [more], costs: [...costs(1), cost('cache_write_5m', 375)], requestsCounted: false },
      options,
    );
    expect(report.rows[0]!.note).toBe('provider has 100 more input tokens; provider has 100 more cache write tokens; provider billed $0.000375 more');
    expect(report.priceFlags).toEqual([]);
  });

  it('prices batch tokens at half, as the bill and the ledger do', () => {
    const report = compareWithProvider(
      [{ ...ledger, costMicros: 2190 }],
      { usage: [{ ...usage, batch: true }], costs: costs(0.5), requestsCounted: false },
      options,
    );
    expect(report.differences).toBe(0);
    expect(report.priceFlags).toEqual([]);
  });
});
