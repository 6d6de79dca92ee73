import { describe, expect, it } from 'vitest';
import { bindingsForPolicy, bindLimits, computeSettlement, createBucketRef, createDemands } from '../../../../src/limits/index.js';
import { formatBucketKey } from '../../../../src/coordination/lease-script.js';
import { parseLimit } from '../../../../src/domain/policy.js';

describe('bucket refs', () => {
  it('puts every limit of one owner in one Redis Cluster slot, and levels in different ones', () => {
    const rpm = createBucketRef('key', 'k_123', parseLimit('requests:60/min'));
    const tpm = createBucketRef('key', 'k_123', parseLimit('tokens:40000/min,burst=60000'));
    const tenant = createBucketRef('tenant', 'acme', parseLimit('usd:5/day'));
    const global = createBucketRef('global', 'ignored', parseLimit('requests:100/s'));
    expect(rpm).toMatchObject({ id: 'key:k_123:requests-per-min', hashTag: 'key:k_123', limitName: 'requests-per-min', burst: 60, unit: 'requests' });
    expect(rpm.ratePerSec).toBe(1);
    expect(tpm.burst).toBe(60_000);
    expect(tenant.hashTag).toBe('tenant:acme');
    expect(tenant.ratePerSec).toBeCloseTo(5_000_000 / 86_400, 9);
    expect(global.hashTag).toBe('global');
    expect(formatBucketKey('tg', rpm.hashTag, rpm.limitName)).toBe('tg:{key:k_123}:requests-per-min');
    expect(createBucketRef('key', 'k', parseLimit('requests:1/s,start=empty')).startEmpty).toBe(true);
  });

  it('builds demands and settlement costs for all levels of a request', () => {
    const bindings = [
      ...bindLimits('key', 'k', [parseLimit('requests:60/min'), parseLimit('tokens:40000/min')]),
      ...bindLimits('global', '', [parseLimit('usd:100/day')]),
    ];
    const demands = createDemands(bindings, {
      model: 'gpt-4o',
      reservedTokens: 500,
      reservedMicroUsd: 2000,
      headers: () => undefined,
      query: () => undefined,
    });
    expect(demands.map((d) => d.cost)).toEqual([1, 500, 2000]);
    expect(demands[2]?.bucket.hashTag).toBe('global');
    expect(computeSettlement(bindings, demands, { model: 'gpt-4o', tokens: 120, microUsd: 480 })).toEqual([1, 120, 480]);
  });

  it('binds a policy once: the same policy gives the same bindings, a changed one new bindings', () => {
    const limits = [parseLimit('requests:60/min'), parseLimit('tokens:40000/min')];
    const first = bindingsForPolicy('key', 'k_1', limits);
    const again = bindingsForPolicy('key', 'k_1', limits);
    expect(again).toBe(first);
    again.forEach((binding, i) => {
      expect(binding).toBe(first[i]);
      expect(binding.bucket).toBe(first[i]!.bucket);
    });
    expect(first).toEqual(bindLimits('key', 'k_1', limits));
    // A policy is replaced as a whole when it changes: a new limits array, new bindings.
    const changed = [parseLimit('requests:30/min'), limits[1]!];
    const next = bindingsForPolicy('key', 'k_1', changed);
    expect(next[0]).not.toBe(first[0]);
    expect(next[0]!.bucket.ratePerSec).toBe(0.5);
    // The same limits shared by another key or another level are other buckets.
    expect(bindingsForPolicy('key', 'k_2', limits)[0]!.bucket.id).toBe('key:k_2:requests-per-min');
    expect(bindingsForPolicy('tenant', 'k_1', limits)[0]!.bucket.hashTag).toBe('tenant:k_1');
    expect(bindingsForPolicy('global', 'a', limits)).toBe(bindingsForPolicy('global', 'b', limits));
  });
});
