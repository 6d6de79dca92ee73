/** Which upstreams serve a model, in order; how an upstream's URL is built; what a route reserves at. Pure. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, costMicroUsd, mergePriceTable, priceTableOverrideSchema, resolvePrice } from '../../../src/estimate/prices.js';
import { candidatesFor, matchesPattern, namedModels, type RoutingTable } from '../../../src/upstreams/routing.js';
import { dearestOf } from '../../../src/upstreams/route-prices.js';
import { upstreamPathFor } from '../../../src/upstreams/router.js';

const table: RoutingTable = {
  upstreams: [
    { name: 'openai', kind: 'openai', models: ['gpt-*', 'o3'], aliases: {} },
    { name: 'azure', kind: 'azure', models: [], aliases: { 'gpt-4o': 'prod-4o', 'gpt-4o-mini': 'mini-east' } },
    { name: 'claude', kind: 'anthropic', models: ['claude-*'], aliases: {} },
    { name: 'compat-claude', kind: 'openai-compatible', models: ['claude-*'], aliases: {} },
    { name: 'local', kind: 'openai-compatible', models: ['meta-llama/*-instruct'], aliases: {} },
  ],
  routes: [
    { pattern: 'gpt-4o', upstreams: ['azure', 'openai'] },
    { pattern: 'gpt-4.1*', upstreams: ['openai', 'azure'] },
    { pattern: 'gpt-4.1-nano', upstreams: ['azure'] },
  ],
};

describe('matchesPattern', () => {
  it('matches exact names, and * as any run of characters', () => {
    expect(matchesPattern('gpt-4o', 'gpt-4o')).toBe(true);
    expect(matchesPattern('gpt-4o', 'gpt-4o-mini')).toBe(false);
    expect(matchesPattern('gpt-*', 'gpt-4o-mini')).toBe(true);
    expect(matchesPattern('gpt-*', 'gpt-')).toBe(true);
    expect(matchesPattern('*', '')).toBe(true);
    expect(matchesPattern('meta-llama/*-instruct', 'meta-llama/llama-3.1-8b-instruct')).toBe(true);
    expect(matchesPattern('meta-llama/*-instruct', 'meta-llama/llama-3.1-8b')).toBe(false);
    expect(matchesPattern('a*a', 'a')).toBe(false);
    expect(matchesPattern('a*b*c', 'abc')).toBe(true);
    expect(matchesPattern('a*b*c', 'acb')).toBe(false);
  });

  it('agrees with a regular expression built from the pattern', () => {
    const piece = fc.stringMatching(/^[ab*]{0,6}$/);
    fc.assert(
      fc.property(piece, fc.stringMatching(/^[ab]{0,8}$/), (pattern, name) => {
        const regex = new RegExp(`^${pattern.replace(/\*/g, '.*')}$`);
        expect(matchesPattern(pattern, name)).toBe(regex.test(name));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('candidatesFor', () => {
  it('follows a route in order, under each upstream’s name for the model', () => {
    expect(candidatesFor(table, 'gpt-4o', 'openai')).toEqual([
      { upstream: 'azure', upstreamModel: 'prod-4o' },
      { upstream: 'openai', upstreamModel: 'gpt-4o' },
    ]);
  });

  it('prefers an exact route to a pattern, whatever their order', () => {
    expect(candidatesFor(table, 'gpt-4.1-nano', 'openai')).toEqual([{ upstream: 'azure', upstreamModel: 'gpt-4.1-nano' }]);
    expect(candidatesFor(table, 'gpt-4.1-mini', 'openai').map((c) => c.upstream)).toEqual(['openai', 'azure']);
  });

  it('without a route, takes the first upstream that serves the model, alias before pattern, and no fallback', () => {
    expect(candidatesFor(table, 'gpt-4o-mini', 'openai')).toEqual([{ upstream: 'openai', upstreamModel: 'gpt-4o-mini' }]);
    expect(candidatesFor(table, 'o3', 'openai')).toEqual([{ upstream: 'openai', upstreamModel: 'o3' }]);
    expect(candidatesFor(table, 'meta-llama/llama-3.1-8b-instruct', 'openai')).toEqual([
      { upstream: 'local', upstreamModel: 'meta-llama/llama-3.1-8b-instruct' },
    ]);
    expect(candidatesFor(table, 'mistral-large', 'openai')).toEqual([]);
  });

  it('routes a request only to upstreams of its own dialect', () => {
    expect(candidatesFor(table, 'claude-sonnet-4-5', 'openai')).toEqual([{ upstream: 'compat-claude', upstreamModel: 'claude-sonnet-4-5' }]);
    expect(candidatesFor(table, 'claude-sonnet-4-5', 'anthropic')).toEqual([{ upstream: 'claude', upstreamModel: 'claude-sonnet-4-5' }]);
    expect(candidatesFor(table, 'gpt-4o', 'anthropic')).toEqual([]);
  });

  it('never routes through an inherited property of the aliases (a client picks the model name)', () => {
    expect(candidatesFor(table, 'constructor', 'openai')).toEqual([]);
    expect(candidatesFor(table, '__proto__', 'openai')).toEqual([]);
  });

  it('names the models a listing can show without asking, each with its first upstream', () => {
    expect(namedModels(table, 'openai')).toEqual(
      expect.arrayContaining([
        { model: 'gpt-4o', upstream: 'azure' },
        { model: 'gpt-4o-mini', upstream: 'openai' },
        { model: 'o3', upstream: 'openai' },
        { model: 'gpt-4.1-nano', upstream: 'azure' },
      ]),
    );
    expect(namedModels(table, 'openai').some((m) => m.model.includes('*'))).toBe(false);
  });
});

describe('upstreamPathFor', () => {
  it('puts an Azure deployment in the path and the api-version in the query', () => {
    const spec = { azureDeployments: true, query: { 'api-version': '2024-10-21' } };
    expect(upstreamPathFor(spec, '/chat/completions', 'prod 4o')).toBe('/deployments/prod%204o/chat/completions?api-version=2024-10-21');
    expect(upstreamPathFor(spec, '/embeddings', 'emb')).toBe('/deployments/emb/embeddings?api-version=2024-10-21');
    expect(upstreamPathFor(spec, '/responses', 'gpt-4o')).toBe('/responses?api-version=2024-10-21');
    expect(upstreamPathFor(spec, '/models', undefined)).toBe('/models?api-version=2024-10-21');
  });

  it('leaves other upstreams’ paths alone but for their configured query', () => {
    expect(upstreamPathFor({ azureDeployments: false, query: {} }, '/chat/completions', 'gpt-4o')).toBe('/chat/completions');
    expect(upstreamPathFor({ azureDeployments: false, query: { a: '1' } }, '/responses/resp_1?include=x', 'gpt-4o')).toBe('/responses/resp_1?include=x&a=1');
  });

  it('is, for any path, spec and model, what building it through URLSearchParams gives (property)', () => {
    /** What upstreamPathFor computed before it had a fast way for a plain path to a plain upstream. */
    function built(spec: { azureDeployments: boolean; query: Record<string, string> }, path: string, model: string | undefined): string {
      const [bare, search = ''] = path.split('?', 2) as [string, string?];
      const params = new URLSearchParams(search);
      for (const [name, value] of Object.entries(spec.query)) params.set(name, value);
      const perDeployment = spec.azureDeployments && model !== undefined && !bare.startsWith('/responses') && !bare.startsWith('/models');
      const full = perDeployment ? `/deployments/${encodeURIComponent(model)}${bare}` : bare;
      const query = params.toString();
      return query === '' ? full : `${full}?${query}`;
    }
    fc.assert(
      fc.property(
        fc.record({
          azureDeployments: fc.boolean(),
          query: fc.constantFrom<Record<string, string>>({}, { 'api-version': '2024-10-21' }, { a: '1', b: 'x y' }),
        }),
        fc.constantFrom('/chat/completions', '/responses', '/responses/resp_1?include=x', '/models', '/embeddings?', '/a?b=1&b=2', '/x?y'),
        fc.option(fc.constantFrom('gpt-4o', 'prod 4o', 'é/1'), { nil: undefined }),
        (spec, path, model) => {
          expect(upstreamPathFor(spec, path, model)).toBe(built(spec, path, model));
        },
      ),
    );
  });
});

describe('dearestOf (what a request with fallbacks is reserved at)', () => {
  const azure = mergePriceTable(builtinPriceTable, priceTableOverrideSchema.parse({ models: { 'gpt-4o': { input: 3, cachedInput: 0.5, output: 9 } } }));

  it('takes every dimension at its highest', () => {
    const price = dearestOf([resolvePrice('gpt-4o', builtinPriceTable), resolvePrice('gpt-4o', azure)]);
    expect(price).toMatchObject({ inputMicroUsdPer1M: 3_000_000, cachedInputMicroUsdPer1M: 1_250_000, outputMicroUsdPer1M: 10_000_000, known: true });
  });

  it('never costs less than any candidate, for any usage', () => {
    const tables = [builtinPriceTable, azure];
    const models = ['gpt-4o', 'gpt-4o-mini', 'o3', 'some-unknown-model'];
    fc.assert(
      fc.property(
        fc.constantFrom(...models),
        fc.nat(100_000),
        fc.nat(100_000),
        fc.nat(100_000),
        fc.constantFrom(undefined, 'priority', 'flex'),
        (model, prompt, cachedShare, completion, serviceTier) => {
          const prices = tables.map((t) => resolvePrice(model, t));
          const usage = { promptTokens: prompt, cachedTokens: Math.min(prompt, cachedShare), completionTokens: completion, serviceTier };
          const dearest = costMicroUsd(usage, dearestOf(prices));
          for (const price of prices) expect(dearest).toBeGreaterThanOrEqual(costMicroUsd(usage, price));
        },
      ),
      { numRuns: 500 },
    );
  });
});
