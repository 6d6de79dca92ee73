/**
 * Estimating an Anthropic Messages body: an upper bound of what Claude bills (src/estimate/README.md,
 * "Claude: an upper bound") — on Anthropic's published counts, for any text, for images, and
 * with the reservation priced for the cache writes the body asks for.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { estimateRequestSync, EstimateInputError } from '../../../src/estimate/index.js';
import { builtinPriceTable, costMicroUsd } from '../../../src/estimate/prices.js';
import { claudeImageTokens, claudeTextTokens, countMessagesPrompt } from '../../../src/estimate/count-messages.js';
import { countTextTokens, loadEncodingSync } from '../../../src/estimate/tokenizer.js';
import { createTextCounter } from '../../../src/estimate/text-counter.js';
import { UnseenTally } from '../../../src/estimate/unseen.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1000 };
const fixtures = JSON.parse(readFileSync(new URL('../../fixtures/estimate/claude-count-tokens.json', import.meta.url), 'utf8')) as {
  cases: Array<{ name: string; inputTokens: number; body: Record<string, unknown> }>;
};
const o200k = loadEncodingSync('o200k_base');
const count = (text: string) => countTextTokens(text, o200k);

function png(width: number, height: number): string {
  const header = Buffer.alloc(24);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header, 0);
  header.writeUInt32BE(13, 8);
  header.write('IHDR', 12, 'latin1');
  header.writeUInt32BE(width, 16);
  header.writeUInt32BE(height, 20);
  return Buffer.concat([header, Buffer.alloc(40)]).toString('base64');
}

describe('estimating a Messages body', () => {
  it.each(fixtures.cases)('never counts fewer tokens than Anthropic billed: $name', ({ body, inputTokens }) => {
    const estimate = estimateRequestSync('messages', body, options);
    expect(estimate.promptTokens).toBeGreaterThanOrEqual(inputTokens);
    // An upper bound, not a wild one.
    expect(estimate.promptTokens).toBeLessThan(inputTokens * 3 + 100);
    expect(estimate.completionTokensReserved).toBe(1024);
  });

  it('bounds any text by ⌈1.5 × its o200k tokens⌉ and by its UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        const tokens = claudeTextTokens(text, count);
        const bytes = Buffer.byteLength(text, 'utf8');
        expect(tokens).toBeLessThanOrEqual(bytes);
        expect(tokens).toBe(Math.min(bytes, Math.ceil(count(text) * 1.5)));
        expect(tokens).toBeGreaterThanOrEqual(Math.min(bytes, count(text)));
      }),
    );
  });

  it("prices images by Anthropic's rule (fit 1568 px and 1,600 tokens, then w×h/750), 1,600 when unseen", () => {
    expect(claudeImageTokens(200, 200)).toBe(54);
    expect(claudeImageTokens(1092, 1092)).toBe(1590);
    expect(claudeImageTokens(4000, 3000)).toBeLessThanOrEqual(1600);
    expect(claudeImageTokens(4000, 3000)).toBeGreaterThan(1500);
    const context = { counter: createTextCounter(o200k, { cache: null }), model: 'claude-opus-4-6', unseen: new UnseenTally() };
    const image = (source: unknown) => countMessagesPrompt({ messages: [{ role: 'user', content: [{ type: 'image', source }] }] }, context);
    expect(image({ type: 'base64', media_type: 'image/png', data: png(1092, 1092) }).imageTokens).toBe(1590);
    expect(image({ type: 'url', url: 'https://example.com/a.png' }).imageTokens).toBe(1600);
  });

  it('reserves the prompt at the cache-write price the body asks for (5 minutes, or 1 hour when any block says so)', () => {
    const body = (ttl?: string) => ({
      model: 'claude-opus-4-6',
      max_tokens: 100,
      system: [{ type: 'text', text: 'A long and stable system prompt.', cache_control: { type: 'ephemeral', ...(ttl ? { ttl } : {}) } }],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const plain = estimateRequestSync('messages', { ...body(), system: 'A long and stable system prompt.' }, options);
    const five = estimateRequestSync('messages', body(), options);
    const hour = estimateRequestSync('messages', body('1h'), options);
    const price = five.price;
    expect(plain.reservedMicroUsd).toBe(costMicroUsd({ promptTokens: plain.promptTokens, completionTokens: 100 }, price));
    expect(five.reservedMicroUsd).toBe(Math.ceil((five.promptTokens * 6.25e6 + 100 * 25e6) / 1e6));
    expect(hour.reservedMicroUsd).toBe(Math.ceil((hour.promptTokens * 10e6 + 100 * 25e6) / 1e6));
  });

  it('counts tools with the tool-use system prompt, and Anthropic-defined tools with their definitions', () => {
    const base = { model: 'claude-opus-4-6', max_tokens: 10, messages: [{ role: 'user', content: 'List files.' }] };
    const none = estimateRequestSync('messages', base, options).promptTokens;
    const custom = estimateRequestSync(
      'messages',
      { ...base, tools: [{ name: 'ls', description: 'List files', input_schema: { type: 'object' } }] },
      options,
    ).promptTokens;
    const bash = estimateRequestSync('messages', { ...base, tools: [{ type: 'bash_20250124', name: 'bash' }] }, options).promptTokens;
    expect(custom - none).toBeGreaterThan(500);
    expect(bash - none).toBeGreaterThan(1500);
  });

  it("reserves Anthropic's web searches ($10 / 1k): max_uses of each search tool, else 3", () => {
    const base = { model: 'claude-opus-4-6', max_tokens: 10, messages: [{ role: 'user', content: 'Search.' }] };
    const none = estimateRequestSync('messages', base, options);
    const five = estimateRequestSync('messages', { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] }, options);
    const open = estimateRequestSync('messages', { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, options);
    expect(none.toolCallsReserved).toEqual({});
    expect(five.toolCallsReserved).toEqual({ webSearch: 5 });
    expect(open.toolCallsReserved).toEqual({ webSearch: 3 });
    // The search results are reserved at a bound rate limits do not take (unseen-input.test.ts); the searches are.
    const counted = five.promptTokens - five.unseen.boundTokens;
    expect(five.reservedMicroUsd - costMicroUsd({ promptTokens: counted, completionTokens: 10 }, five.price)).toBe(5 * 10_000);
  });

  it('refuses a body without max_tokens or messages, naming the field', () => {
    const attempt = (body: Record<string, unknown>) => () => estimateRequestSync('messages', { model: 'claude-opus-4-6', ...body }, options);
    expect(attempt({ messages: [] })).toThrow(EstimateInputError);
    expect(attempt({ messages: [] })).toThrow(/max_tokens/);
    expect(attempt({ max_tokens: 5 })).toThrow(/messages/);
    expect(attempt({ max_tokens: 5, messages: [{ role: 'user', content: 7 }] })).toThrow(/messages\[0\]\.content/);
  });
});
