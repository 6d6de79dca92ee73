/** Reading the upstream's usage block: every shape, zero kept as zero, no full parse needed. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readUsage, usageFromJsonBytes } from '../../../src/dialects/usage.js';

const chatUsage = {
  prompt_tokens: 120,
  completion_tokens: 30,
  total_tokens: 150,
  prompt_tokens_details: { cached_tokens: 64 },
  completion_tokens_details: { reasoning_tokens: 10 },
};

describe('usage', () => {
  it('reads the chat/completions shape with cached and reasoning details', () => {
    expect(readUsage(chatUsage)).toEqual({ promptTokens: 120, cachedTokens: 64, completionTokens: 30, reasoningTokens: 10 });
  });

  it('reads the Responses shape', () => {
    expect(
      readUsage({ input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 4 } }),
    ).toEqual({ promptTokens: 5, cachedTokens: 0, completionTokens: 9, reasoningTokens: 4 });
  });

  it('keeps zero as zero and treats only a missing prompt count as no usage', () => {
    expect(readUsage({ prompt_tokens: 0, completion_tokens: 0 })).toEqual({ promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 });
    expect(readUsage({ completion_tokens: 3 })).toBeUndefined();
    expect(readUsage(null)).toBeUndefined();
    expect(readUsage({ prompt_tokens: -1 })).toBeUndefined();
  });

  it('reads usage at the end of a large embeddings answer', () => {
    const data = Array.from({ length: 2000 }, (_, index) => ({ object: 'embedding', index, embedding: Array.from({ length: 64 }, () => Math.random()) }));
    const bytes = Buffer.from(JSON.stringify({ object: 'list', data, model: 'text-embedding-3-small', usage: { prompt_tokens: 4000, total_tokens: 4000 } }));
    expect(usageFromJsonBytes(bytes)).toEqual({ promptTokens: 4000, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 });
  });

  it('is not fooled by "usage" written inside the model\'s text', () => {
    const answer = { choices: [{ message: { content: 'x,"usage":{"prompt_tokens":1}' } }], usage: chatUsage, tail: 'after' };
    const trick = { usage: chatUsage, choices: [{ message: { content: ',"usage":{"prompt_tokens":999,"completion_tokens":0}' } }] };
    expect(usageFromJsonBytes(Buffer.from(JSON.stringify(answer)))?.promptTokens).toBe(120);
    expect(usageFromJsonBytes(Buffer.from(JSON.stringify(trick)))?.promptTokens).toBe(120);
  });

  it('agrees with a full parse on any answer carrying a usage block', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), fc.nat(), (noise, prompt, completion) => {
        const body = { noise, usage: { prompt_tokens: prompt, completion_tokens: completion }, trailer: noise };
        for (const text of [JSON.stringify(body), JSON.stringify(body, null, 2)]) {
          expect(usageFromJsonBytes(Buffer.from(text))).toEqual(readUsage(body.usage));
        }
      }),
    );
  });
});
