import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, costMicroUsd, estimateRequestSync, EstimateInputError } from '../../../src/estimate/index.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1_000 };
const messages = [{ role: 'user', content: 'Say hello.' }];

function inputError(run: () => unknown): EstimateInputError {
  try {
    run();
  } catch (error) {
    if (error instanceof EstimateInputError) return error;
    throw error;
  }
  throw new Error('expected an EstimateInputError');
}

describe('the completion reservation', () => {
  it('reserves n × the request limit, preferring max_completion_tokens over max_tokens', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4_000 }),
        fc.option(fc.integer({ min: 1, max: 4_000 }), { nil: undefined }),
        (n, maxTokens, maxCompletion) => {
          const estimate = estimateRequestSync('chat', { model: 'gpt-4o', messages, n, max_tokens: maxTokens, max_completion_tokens: maxCompletion }, options);
          const perChoice = maxCompletion ?? maxTokens;
          return (
            estimate.completionTokensReserved === n * perChoice &&
            estimate.reservedTokens === estimate.promptTokens + n * perChoice &&
            estimate.reservedMicroUsd === costMicroUsd({ promptTokens: estimate.promptTokens, completionTokens: n * perChoice }, estimate.price)
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('uses the default when the request sets no limit, capped by the model output limit', () => {
    expect(estimateRequestSync('chat', { model: 'gpt-4o', messages }, options).completionTokensReserved).toBe(1_000);
    const capped = estimateRequestSync('chat', { model: 'gpt-4o', messages }, { ...options, defaultMaxCompletionTokens: 100_000 });
    expect(capped.completionTokensReserved).toBe(16_384);
  });

  it('reads max_output_tokens on the Responses API', () => {
    expect(estimateRequestSync('responses', { model: 'o4-mini', input: 'hi', max_output_tokens: 777 }, options).completionTokensReserved).toBe(777);
  });

  it('reserves best_of completions per prompt on the legacy completions endpoint', () => {
    const estimate = estimateRequestSync(
      'completions',
      { model: 'gpt-3.5-turbo-instruct', prompt: ['a', 'b', 'c'], n: 2, best_of: 5, max_tokens: 10 },
      options,
    );
    expect(estimate.completionTokensReserved).toBe(3 * 5 * 10);
    expect(estimate.n).toBe(5);
    expect(estimate.promptCount).toBe(3);
  });

  it('reserves nothing for embeddings', () => {
    const estimate = estimateRequestSync('embeddings', { model: 'text-embedding-3-small', input: 'hello world', max_tokens: 5 }, options);
    expect(estimate.completionTokensReserved).toBe(0);
    expect(estimate.promptTokens).toBe(2);
  });

  it('rejects a limit that is not a positive integer', () => {
    for (const value of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2]) {
      expect(inputError(() => estimateRequestSync('chat', { model: 'gpt-4o', messages, max_tokens: value }, options))).toMatchObject({
        param: 'max_tokens',
        code: 'invalid_value',
      });
    }
    expect(inputError(() => estimateRequestSync('chat', { model: 'gpt-4o', messages, max_completion_tokens: '10' }, options))).toMatchObject({
      param: 'max_completion_tokens',
      code: 'invalid_type',
    });
    expect(inputError(() => estimateRequestSync('chat', { model: 'gpt-4o', messages, n: 0 }, options))).toMatchObject({ param: 'n' });
  });

  it('accepts null limits as absent', () => {
    expect(estimateRequestSync('chat', { model: 'gpt-4o', messages, max_tokens: null, n: null }, options).completionTokensReserved).toBe(1_000);
  });

  it('refuses a prompt plus completion beyond the context window', () => {
    const error = inputError(() => estimateRequestSync('chat', { model: 'gpt-4', messages, max_tokens: 8_190 }, options));
    expect(error).toMatchObject({ param: 'messages', code: 'context_length_exceeded' });
    const long = [{ role: 'user', content: 'word '.repeat(9_000) }];
    expect(inputError(() => estimateRequestSync('chat', { model: 'gpt-4', messages: long }, options))).toMatchObject({ code: 'context_length_exceeded' });
    expect(
      inputError(() => estimateRequestSync('embeddings', { model: 'text-embedding-3-small', input: ['ok', 'word '.repeat(9_000)] }, options)),
    ).toMatchObject({
      param: 'input[1]',
      code: 'context_length_exceeded',
    });
  });

  it('shrinks the default reservation to what is left of the window instead of refusing', () => {
    const content = 'word '.repeat(7_000);
    const estimate = estimateRequestSync('chat', { model: 'gpt-4', messages: [{ role: 'user', content }] }, { ...options, defaultMaxCompletionTokens: 4_000 });
    expect(estimate.completionTokensReserved).toBeLessThan(4_000);
    expect(estimate.promptTokens + estimate.completionTokensReserved).toBe(8_192);
  });

  it('prices unknown models with the fallback and no window', () => {
    const estimate = estimateRequestSync('chat', { model: 'my-local-llama', messages, max_tokens: 1_000_000 }, options);
    expect(estimate.price.known).toBe(false);
    expect(estimate.completionTokensReserved).toBe(1_000_000);
  });
});
