/** Totals beside dollar rows (src/cli/format.ts): as precise as the rows, so they add up on sight. */
import { describe, expect, it } from 'vitest';
import { formatMicrosShort as usd, usdTotal } from '../../../src/domain/money.js';

describe('a total beside dollar rows', () => {
  it('shows sub-cent rows summing to $0.035 as $0.035, not $0.04', () => {
    expect(usd(35_000)).toBe('$0.04');
    expect(usdTotal(35_000, [8_750, 8_750, 17_500])).toBe('$0.035');
  });

  it('keeps cents when every row shows cents', () => {
    expect(usdTotal(4_750_000, [1_250_000, 3_500_000])).toBe('$4.75');
    expect(usdTotal(0, [])).toBe('$0.00');
  });

  it('takes the finest precision of any row, thousands separators included', () => {
    expect(usdTotal(1_234_500_007, [1_234_500_000, 7])).toBe('$1,234.500007');
    expect(usdTotal(12_345, [12_000, 345])).toBe('$0.012345');
  });

  it('shows a total under a cent as the rows do, even with no rows', () => {
    expect(usdTotal(85, [])).toBe(usd(85));
    expect(usdTotal(-35_000, [-8_750])).toBe('-$0.035');
  });
});
