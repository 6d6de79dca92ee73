/**
 * The pure comparison of ledger cells with a provider report: cells that
 * agree match, each kind of difference is named on the right cell and only
 * there, snapshot names meet their undated names, and price entries are
 * flagged only when the provider's effective price is not the table's.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { agrees, compareWithProvider, normalizeModel, type LedgerCell } from '../../../src/reconcile/compare.js';
import { parseLineItem } from '../../../src/reconcile/openai.js';
import type { ProviderCostCell, ProviderReport, ProviderUsageCell } from '../../../src/reconcile/provider.js';

const PRICES: Record<string, { inputMicroUsdPer1M: number; cachedInputMicroUsdPer1M: number; outputMicroUsdPer1M: number }> = {
  'gpt-4o-mini': { inputMicroUsdPer1M: 150_000, cachedInputMicroUsdPer1M: 75_000, outputMicroUsdPer1M: 600_000 },
  'gpt-4o': { inputMicroUsdPer1M: 2_500_000, cachedInputMicroUsdPer1M: 1_250_000, outputMicroUsdPer1M: 10_000_000 },
};
const options = {
  provider: 'test',
  since: '2026-11-01',
  until: '2026-11-03',
  generatedAt: 0,
  byProject: false,
  tolerancePercent: 1,
  priceOf: (m: string) => PRICES[m],
};

/** What the provider reports for a ledger cell billed at the table's prices (exact dollars, rounded per line). */
function providerOf(cells: readonly LedgerCell[], snapshot = (m: string) => `${m}-2024-07-18`): ProviderReport {
  const usage: ProviderUsageCell[] = [];
  const costs: ProviderCostCell[] = [];
  for (const cell of cells) {
    const price = PRICES[cell.model]!;
    const model = snapshot(cell.model);
    usage.push({ ...cell, model });
    const line = (kind: ProviderCostCell['kind'], tokens: number, per1M: number) =>
      costs.push({ day: cell.day, project: cell.project, lineItem: `${model}, ${kind}`, model, kind, costMicros: Math.round((tokens * per1M) / 1e6) });
    line('input', cell.inputTokens - cell.cachedInputTokens, price.inputMicroUsdPer1M);
    line('cached_input', cell.cachedInputTokens, price.cachedInputMicroUsdPer1M);
    line('output', cell.outputTokens, price.outputMicroUsdPer1M);
  }
  return { usage, costs };
}

/** A ledger cell whose cost is what the table says (each request rounded up, as the ledger does). */
function ledgerCell(day: string, model: string, requests: number, input: number, cached: number, output: number): LedgerCell {
  const p = PRICES[model]!;
  const exact = ((input - cached) * p.inputMicroUsdPer1M + cached * p.cachedInputMicroUsdPer1M + output * p.outputMicroUsdPer1M) / 1e6;
  return {
    day,
    model,
    project: null,
    requests,
    inputTokens: input,
    cachedInputTokens: cached,
    outputTokens: output,
    costMicros: Math.ceil(exact) + requests - 1,
  };
}

const arbCell = fc
  .record({
    day: fc.constantFrom('2026-11-01', '2026-11-02', '2026-11-03'),
    model: fc.constantFrom('gpt-4o-mini', 'gpt-4o'),
    requests: fc.integer({ min: 1, max: 50 }),
    input: fc.integer({ min: 1, max: 2_000_000 }),
    output: fc.integer({ min: 0, max: 500_000 }),
    cachedShare: fc.double({ min: 0, max: 1, noNaN: true }),
  })
  .map((c) => ledgerCell(c.day, c.model, c.requests, c.input, Math.floor(c.input * c.cachedShare), c.output));
const arbCells = fc.uniqueArray(arbCell, { selector: (c) => `${c.day}|${c.model}`, minLength: 1, maxLength: 6 });

describe('agreement', () => {
  it('a ledger that is what the provider billed agrees in every cell, and no price is flagged', () => {
    fc.assert(
      fc.property(arbCells, (cells) => {
        const report = compareWithProvider(cells, providerOf(cells), options);
        expect(report.differences).toBe(0);
        expect(report.rows.every((row) => row.status === 'match')).toBe(true);
        expect(report.priceFlags).toEqual([]);
        expect(report.totals.ledger.requests).toBe(report.totals.provider.requests);
      }),
    );
  });

  it('one cell changed on the provider side is the only difference, on that cell', () => {
    fc.assert(
      fc.property(arbCells, fc.nat(), fc.constantFrom('requests', 'outputTokens', 'drop', 'extra'), (cells, pick, change) => {
        const target = cells[pick % cells.length]!;
        const provider = providerOf(cells);
        let usage = provider.usage;
        let costs = provider.costs;
        const isTarget = (c: { day: string; model: string }) => c.day === target.day && normalizeModel(c.model) === target.model;
        if (change === 'drop') {
          usage = usage.filter((c) => !isTarget(c));
          costs = costs.filter((c) => !isTarget({ day: c.day, model: c.model ?? '' }));
        } else if (change === 'extra') {
          usage = [...usage, { day: '2026-11-04', model: 'gpt-4o', project: null, requests: 1, inputTokens: 10, cachedInputTokens: 0, outputTokens: 10 }];
        } else {
          usage = usage.map((c) => (isTarget(c) ? { ...c, [change]: c[change] + Math.max(5, Math.ceil(c[change] * 0.05)) } : c));
        }
        const report = compareWithProvider(cells, { usage, costs }, options);
        const off = report.rows.filter((row) => row.status !== 'match');
        expect(off).toHaveLength(1);
        if (change === 'extra') expect(off[0]).toMatchObject({ day: '2026-11-04', model: 'gpt-4o', status: 'missing_in_ledger', ledger: null });
        else if (change === 'drop') expect(off[0]).toMatchObject({ day: target.day, model: target.model, status: 'missing_at_provider', provider: null });
        else expect(off[0]).toMatchObject({ day: target.day, model: target.model, status: 'differs' });
      }),
    );
  });
});

describe('price flags', () => {
  it('flags a model the provider charges 1.5× for, input and output, and nothing else', () => {
    const cells = [ledgerCell('2026-11-01', 'gpt-4o', 10, 100_000, 0, 50_000), ledgerCell('2026-11-01', 'gpt-4o-mini', 10, 100_000, 20_000, 50_000)];
    const provider = providerOf(cells);
    const costs = provider.costs.map((c) => (c.model?.startsWith('gpt-4o-2') ? { ...c, costMicros: Math.round(c.costMicros * 1.5) } : c));
    const report = compareWithProvider(cells, { usage: provider.usage, costs }, options);
    expect(report.priceFlags.map((f) => [f.model, f.kind, f.effectiveMicroUsdPer1M, f.tableMicroUsdPer1M])).toEqual([
      ['gpt-4o', 'input', 3_750_000, 2_500_000],
      ['gpt-4o', 'output', 15_000_000, 10_000_000],
    ]);
    expect(report.rows.find((r) => r.model === 'gpt-4o')?.status).toBe('differs');
    expect(report.rows.find((r) => r.model === 'gpt-4o-mini')?.status).toBe('match');
  });

  it('flags a model the price table does not know', () => {
    const usage: ProviderUsageCell[] = [
      { day: '2026-11-01', model: 'my-finetune', project: null, requests: 1, inputTokens: 100, cachedInputTokens: 0, outputTokens: 0 },
    ];
    const costs: ProviderCostCell[] = [
      { day: '2026-11-01', project: null, lineItem: 'my-finetune, input', model: 'my-finetune', kind: 'input', costMicros: 30 },
    ];
    const report = compareWithProvider([], { usage, costs }, options);
    expect(report.priceFlags).toHaveLength(1);
    expect(report.priceFlags[0]!.note).toContain('not in the price table');
    expect(report.rows[0]).toMatchObject({ status: 'missing_in_ledger' });
  });
});

describe('shapes', () => {
  it('reads line items into model and kind; others are listed apart, not compared', () => {
    expect(parseLineItem('gpt-4o-mini-2024-07-18, input')).toEqual({ model: 'gpt-4o-mini-2024-07-18', kind: 'input' });
    expect(parseLineItem('gpt-4o-2024-08-06, cached input')).toEqual({ model: 'gpt-4o-2024-08-06', kind: 'cached_input' });
    expect(parseLineItem('o3, output')).toEqual({ model: 'o3', kind: 'output' });
    expect(parseLineItem('web search tool calls')).toEqual({ model: null, kind: 'other' });
    const report = compareWithProvider(
      [],
      { usage: [], costs: [{ day: '2026-11-01', project: null, lineItem: 'web search tool calls', model: null, kind: 'other', costMicros: 25_000 }] },
      options,
    );
    expect(report.rows).toEqual([]);
    expect(report.unattributedCosts).toEqual([{ day: '2026-11-01', project: null, lineItem: 'web search tool calls', costMicros: 25_000 }]);
  });

  it('dated snapshots meet their undated names; projects split cells only with a mapping', () => {
    expect(normalizeModel('GPT-4o-mini-2024-07-18')).toBe('gpt-4o-mini');
    const cell = { ...ledgerCell('2026-11-01', 'gpt-4o-mini', 1, 10, 0, 10), project: 'proj_a' };
    const provider = providerOf([{ ...cell, project: 'proj_b' }]);
    expect(compareWithProvider([cell], provider, options).differences).toBe(0);
    const byProject = compareWithProvider([cell], provider, { ...options, byProject: true });
    expect(byProject.rows.map((r) => `${r.project} ${r.status}`).sort()).toEqual(['proj_a missing_at_provider', 'proj_b missing_in_ledger']);
  });

  it('agrees within the slack or the percentage, not beyond', () => {
    expect(agrees(100, 101, 1)).toBe(true);
    expect(agrees(100, 102, 1)).toBe(false);
    expect(agrees(3, 0, 0, 3)).toBe(true);
    expect(agrees(4, 0, 0, 3)).toBe(false);
  });
});
