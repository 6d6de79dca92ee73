import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countCacheKey, TokenCountCache } from '../../../src/estimate/count-cache.js';
import { builtinPriceTable, clearEstimateCache, estimateRequestSync, getEstimatorStats } from '../../../src/estimate/index.js';

describe('the count cache', () => {
  it('evicts the least recently used entry past its entry limit', () => {
    const cache = new TokenCountCache({ maxEntries: 2, maxBytes: 1_000_000 });
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('stays within its byte limit whatever is stored', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ maxLength: 300 }), fc.nat()), { maxLength: 200 }), (entries) => {
        const cache = new TokenCountCache({ maxEntries: 50, maxBytes: 4_000 });
        for (const [key, count] of entries) cache.set(key, count);
        return cache.size <= 50 && cache.byteSize <= 4_000;
      }),
    );
  });

  it('keys long texts by a short digest and short texts by themselves, per encoding', () => {
    const long = 'x'.repeat(10_000);
    expect(countCacheKey('o200k_base', long).length).toBeLessThan(40);
    expect(countCacheKey('o200k_base', long)).not.toBe(countCacheKey('cl100k_base', long));
    expect(countCacheKey('o200k_base', 'short text')).toBe('o:short text');
  });

  it('serves the earlier turns of a conversation from the cache on the next turn', () => {
    clearEstimateCache();
    const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 100 };
    const system = { role: 'system', content: 'You are a meticulous assistant who answers in full sentences.' };
    const turns = [system, { role: 'user', content: 'Please summarise the plot of Hamlet in three sentences for me.' }];
    const first = estimateRequestSync('chat', { model: 'gpt-4o', messages: turns }, options);
    const entries = getEstimatorStats().cacheEntries;
    const second = estimateRequestSync('chat', { model: 'gpt-4o', messages: turns }, options);
    expect(second).toEqual(first);
    expect(getEstimatorStats().cacheEntries).toBe(entries);
  });
});
