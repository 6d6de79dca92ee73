/** Budget-aware downgrade names models the way the price table does: a pair for gpt-4o covers its dated snapshots, prefixed names and fine-tunes, and nothing else. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { downgradeSource, downgradeTarget } from '../../../src/budgets/downgrade.js';
import { builtinPriceTable, resolvePrice } from '../../../src/estimate/index.js';

const DOWNGRADE = { atPercent: 80, models: { 'gpt-4o': 'gpt-4o-mini', o3: 'o4-mini', 'claude-opus-4-1': 'claude-sonnet-4-5' } };
const SPENT = [0.9];

describe('which requests a downgrade pair covers', () => {
  it.each([
    ['gpt-4o', 'gpt-4o-mini'],
    ['gpt-4o-2024-08-06', 'gpt-4o-mini'],
    ['gpt-4o-2024-05-13', 'gpt-4o-mini'],
    ['openai/gpt-4o', 'gpt-4o-mini'],
    ['GPT-4o-2024-11-20', 'gpt-4o-mini'],
    ['ft:gpt-4o-2024-08-06:acme::abc123', 'gpt-4o-mini'],
    ['o3-2025-04-16', 'o4-mini'],
    ['claude-opus-4-1-20250805', 'claude-sonnet-4-5'],
  ])('%s goes to %s', (asked, cheaper) => {
    expect(downgradeTarget(DOWNGRADE, asked, SPENT)).toBe(cheaper);
  });

  it.each(['gpt-4o-mini', 'gpt-4o-mini-2024-07-18', 'gpt-4o-audio-preview', 'chatgpt-4o-latest', 'o3-mini', 'o3-mini-2025-01-31', 'o3-pro', 'gpt-4.1'])(
    '%s is not covered',
    (asked) => {
      expect(downgradeSource(DOWNGRADE, asked)).toBeUndefined();
      expect(downgradeTarget(DOWNGRADE, asked, SPENT)).toBeUndefined();
    },
  );

  it('prefers a pair that names the dated snapshot itself', () => {
    const both = { atPercent: 50, models: { 'gpt-4o': 'gpt-4o-mini', 'gpt-4o-2024-05-13': 'gpt-4.1-mini' } };
    expect(downgradeTarget(both, 'gpt-4o-2024-05-13', SPENT)).toBe('gpt-4.1-mini');
    expect(downgradeTarget(both, 'gpt-4o-2024-08-06', SPENT)).toBe('gpt-4o-mini');
  });

  it('covers exactly the names the price table prices as the pair’s model', () => {
    const models = Object.keys(builtinPriceTable.models);
    const date = fc.tuple(fc.integer({ min: 2023, max: 2029 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }));
    fc.assert(
      fc.property(fc.constantFrom(...models), fc.constantFrom(...models), date, (from, asked, [y, m, d]) => {
        const dated = `${asked}-${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
        const pricedAs = resolvePrice(dated, builtinPriceTable).model;
        const covered = downgradeSource({ atPercent: 80, models: { [from]: 'cheaper' } }, dated) !== undefined;
        expect(covered, `${dated} priced as ${pricedAs}, pair for ${from}`).toBe(pricedAs === from);
      }),
      { numRuns: 500 },
    );
  });
});

describe('when a covered request is downgraded', () => {
  it('only once some budget has spent the threshold share of its cap', () => {
    expect(downgradeTarget(DOWNGRADE, 'gpt-4o-2024-08-06', [0.5, 0.79])).toBeUndefined();
    expect(downgradeTarget(DOWNGRADE, 'gpt-4o-2024-08-06', [0.5, 0.8])).toBe('gpt-4o-mini');
    expect(downgradeTarget(DOWNGRADE, 'gpt-4o-2024-08-06', [])).toBeUndefined();
    expect(downgradeTarget(undefined, 'gpt-4o', SPENT)).toBeUndefined();
  });
});
