import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeActualCost, computeLimitCost, findModelWeight, type RequestFacts } from '../../../../src/limits/algorithm/demands.js';
import { parseLimit, type LimitSpec } from '../../../../src/domain/policy.js';

function facts(over: Partial<RequestFacts> = {}, headers: Record<string, string> = {}, query: Record<string, string> = {}): RequestFacts {
  return {
    model: 'gpt-4o-mini',
    reservedTokens: 1200,
    reservedMicroUsd: 3456,
    headers: (name) => headers[name.toLowerCase()],
    query: (name) => query[name],
    ...over,
  };
}

describe('request costs per limit', () => {
  it('costs one request by default', () => {
    expect(computeLimitCost(parseLimit('requests:60/min'), facts())).toBe(1);
  });

  it('reads a request cost from a header or query parameter, with its default when absent or not a number', () => {
    const byHeader: LimitSpec = { ...parseLimit('requests:60/min'), costSource: { kind: 'header', name: 'x-request-weight', default: 2 } };
    const byQuery: LimitSpec = { ...parseLimit('requests:60/min'), costSource: { kind: 'query', name: 'weight', default: 1 } };
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '5' }))).toBe(5);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': ' 2.5 ' }))).toBe(3);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': 'heavy' }))).toBe(2);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '' }))).toBe(2);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '-3' }))).toBe(2);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '0x10' }))).toBe(2);
    expect(computeLimitCost(byHeader, facts())).toBe(2);
    // A client's weight never goes below one request.
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '0' }))).toBe(1);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '0.0' }))).toBe(1);
    expect(computeLimitCost(byHeader, facts({}, { 'x-request-weight': '0.001' }))).toBe(1);
    expect(computeLimitCost(byQuery, facts({}, {}, { weight: '7' }))).toBe(7);
    expect(computeLimitCost(byQuery, facts())).toBe(1);
  });

  it('charges every request at least one unit, whatever its header or query says', () => {
    const byHeader: LimitSpec = { ...parseLimit('requests:60/min'), costSource: { kind: 'header', name: 'x-weight', default: 1 } };
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(computeLimitCost(byHeader, facts({}, { 'x-weight': text }))).toBeGreaterThanOrEqual(1);
      }),
    );
  });

  it('weights tokens by the first matching model prefix, rounding up', () => {
    const tpm: LimitSpec = { ...parseLimit('tokens:100000/min'), modelWeights: { 'gpt-4o-mini': 0.25, 'gpt-4o': 2, o1: 6 } };
    expect(findModelWeight(tpm, 'gpt-4o-mini-2024-07-18')).toBe(0.25);
    expect(findModelWeight(tpm, 'gpt-4o-2024-08-06')).toBe(2);
    expect(findModelWeight(tpm, 'claude-3')).toBe(1);
    expect(computeLimitCost(tpm, facts({ model: 'gpt-4o-mini', reservedTokens: 1001 }))).toBe(251);
    expect(computeLimitCost(tpm, facts({ model: 'o1-preview', reservedTokens: 100 }))).toBe(600);
  });

  it('costs micro-USD for a usd limit', () => {
    expect(computeLimitCost(parseLimit('usd:5/day'), facts())).toBe(3456);
  });

  it('turns actual usage into actual costs for settlement, in the same order', () => {
    const limits = [parseLimit('requests:60/min'), { ...parseLimit('tokens:100000/min'), modelWeights: { 'gpt-4o': 2 } }, parseLimit('usd:5/day')];
    const reserved = limits.map((limit) => computeLimitCost(limit, facts({ model: 'gpt-4o' })));
    expect(reserved).toEqual([1, 2400, 3456]);
    expect(limits.map((limit, i) => computeActualCost(limit, reserved[i]!, { model: 'gpt-4o', tokens: 300, microUsd: 900 }))).toEqual([1, 600, 900]);
  });
});
