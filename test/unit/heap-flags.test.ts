import { describe, expect, it } from 'vitest';
import { servingHeapFlags } from '../../src/heap-flags.js';

describe('servingHeapFlags', () => {
  it('turns allocation-site pretenuring off when node was started without a word on it', () => {
    expect(servingHeapFlags([])).toEqual(['--no-allocation-site-pretenuring']);
    expect(servingHeapFlags(['--max-old-space-size=512', '--enable-source-maps'])).toEqual(['--no-allocation-site-pretenuring']);
  });

  it("leaves the operator's choice, in either spelling V8 accepts", () => {
    for (const flag of [
      '--allocation-site-pretenuring',
      '--no-allocation-site-pretenuring',
      '--allocation_site_pretenuring',
      '--no_allocation_site_pretenuring',
    ]) {
      expect(servingHeapFlags(['--enable-source-maps', flag])).toEqual([]);
    }
  });
});
