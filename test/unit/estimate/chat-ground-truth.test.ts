import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, estimateRequestSync } from '../../../src/estimate/index.js';

interface CookbookFixture {
  messages: unknown[];
  expected: Record<string, number>;
}
interface HmarrCase {
  name: string;
  messages: unknown[];
  functions?: unknown[];
  function_call?: unknown;
  tokens: number;
}

function readFixture<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../../fixtures/estimate/${name}`, import.meta.url), 'utf8')) as T;
}

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 16 };
const cookbook = readFixture<CookbookFixture>('cookbook-example-messages.json');
const cookbookTools = readFixture<CookbookFixture & { tools: unknown[] }>('cookbook-tools-example.json');
const hmarr = readFixture<{ model: string; cases: HmarrCase[] }>('hmarr-chat-tokens.json');

describe('chat prompt tokens match what the API reported', () => {
  it.each(Object.entries(cookbook.expected))('counts the cookbook conversation on %s as %i tokens', (model, tokens) => {
    expect(estimateRequestSync('chat', { model, messages: cookbook.messages }, options).promptTokens).toBe(tokens);
  });

  it.each(Object.entries(cookbookTools.expected))('counts the cookbook tool-calling request on %s as %i tokens', (model, tokens) => {
    const body = { model, messages: cookbookTools.messages, tools: cookbookTools.tools };
    expect(estimateRequestSync('chat', body, options).promptTokens).toBe(tokens);
  });

  it.each(hmarr.cases.map((c) => [c.name, c] as const))('counts the recorded function-calling case "%s" exactly', (_name, testCase) => {
    const body = {
      model: hmarr.model,
      messages: testCase.messages,
      ...(testCase.functions ? { functions: testCase.functions } : {}),
      ...(testCase.function_call ? { function_call: testCase.function_call } : {}),
    };
    expect(estimateRequestSync('chat', body, options).promptTokens).toBe(testCase.tokens);
  });

  it('counts functions passed as tools the same as legacy functions', () => {
    for (const testCase of hmarr.cases.filter((c) => c.functions && !c.function_call)) {
      const legacy = estimateRequestSync('chat', { model: hmarr.model, messages: testCase.messages, functions: testCase.functions }, options);
      const tools = estimateRequestSync(
        'chat',
        { model: hmarr.model, messages: testCase.messages, tools: testCase.functions?.map((fn) => ({ type: 'function', function: fn })) },
        options,
      );
      expect(tools.promptTokens).toBe(legacy.promptTokens);
    }
  });

  it('primes the reply with one token fewer on reasoning models', () => {
    const chat = estimateRequestSync('chat', { model: 'gpt-4o', messages: cookbook.messages }, options).promptTokens;
    for (const model of ['o1', 'o3-mini', 'o4-mini', 'gpt-5', 'gpt-5-mini']) {
      expect(estimateRequestSync('chat', { model, messages: cookbook.messages }, options).promptTokens).toBe(chat - 1);
    }
  });
});
