import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, estimateRequestSync, EstimateInputError } from '../../../src/estimate/index.js';
import type { Endpoint } from '../../../src/endpoints.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 100 };
const endpoints: Endpoint[] = ['chat', 'completions', 'embeddings', 'responses'];

function errorOf(endpoint: Endpoint, body: unknown): EstimateInputError {
  try {
    estimateRequestSync(endpoint, body, options);
  } catch (error) {
    if (error instanceof EstimateInputError) return error;
    throw error;
  }
  throw new Error('expected an EstimateInputError');
}

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function nestedSchema(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { x: schema } };
  return schema;
}

describe('malformed bodies are refused with the offending parameter', () => {
  it('requires a non-empty string model', () => {
    expect(errorOf('chat', { messages: [] })).toMatchObject({ param: 'model', code: 'missing_required_parameter' });
    expect(errorOf('chat', { model: 4, messages: [] })).toMatchObject({ param: 'model', code: 'invalid_type' });
    expect(errorOf('chat', { model: '  ', messages: [] })).toMatchObject({ param: 'model', code: 'invalid_value' });
    expect(errorOf('chat', null)).toMatchObject({ param: null, code: 'invalid_type' });
    expect(errorOf('chat', [1, 2])).toMatchObject({ param: null, code: 'invalid_type' });
  });

  it('points at the exact message field that is wrong', () => {
    expect(errorOf('chat', { model: 'gpt-4o', messages: 'hi' })).toMatchObject({ param: 'messages', code: 'invalid_type' });
    expect(errorOf('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'a' }, 'b'] })).toMatchObject({ param: 'messages[1]' });
    expect(errorOf('chat', { model: 'gpt-4o', messages: [{ role: 'wizard', content: 'a' }] })).toMatchObject({
      param: 'messages[0].role',
      code: 'invalid_value',
    });
    expect(
      errorOf('chat', {
        model: 'gpt-4o',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'user', content: 5 },
        ],
      }),
    ).toMatchObject({
      param: 'messages[2].content',
      code: 'invalid_type',
    });
    expect(errorOf('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'text', text: 1 }] }] })).toMatchObject({
      param: 'messages[0].content[0].text',
    });
    expect(errorOf('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] })).toMatchObject({
      param: 'messages[0].content[0].image_url.url',
    });
    expect(errorOf('chat', { model: 'gpt-4o', messages: [], tools: {} })).toMatchObject({ param: 'tools' });
    expect(errorOf('chat', { model: 'gpt-4o', messages: [], tools: [{ type: 'function', function: { name: 3 } }] })).toMatchObject({
      param: 'tools[0].function.name',
    });
  });

  it('points at bad prompt and input items', () => {
    expect(errorOf('completions', { model: 'gpt-3.5-turbo-instruct', prompt: [[1, 2, -3]] })).toMatchObject({ param: 'prompt[0][2]' });
    expect(errorOf('embeddings', { model: 'text-embedding-3-small', input: ['a', {}] })).toMatchObject({ param: 'input[1]' });
    expect(errorOf('embeddings', { model: 'text-embedding-3-small' })).toMatchObject({ param: 'input', code: 'missing_required_parameter' });
    expect(errorOf('responses', { model: 'gpt-4o', input: [{ type: 'function_call', name: 'f', arguments: 7 }] })).toMatchObject({
      param: 'input[0].arguments',
    });
  });

  it('refuses 10,000-deep nesting in a tool schema without overflowing the stack', () => {
    const body = { model: 'gpt-4o', messages: [], tools: [{ type: 'function', function: { name: 'f', parameters: nestedSchema(10_000) } }] };
    expect(errorOf('chat', body)).toMatchObject({ code: 'nesting_too_deep', param: 'tools[0].function.parameters' });
  });

  it('refuses 10,000-deep arrays in unknown parts, items and response formats', () => {
    expect(errorOf('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'future_part', value: nested(10_000) }] }] }).code).toBe(
      'nesting_too_deep',
    );
    expect(errorOf('responses', { model: 'gpt-4o', input: [{ type: 'web_search_call', value: nested(10_000) }] }).code).toBe('nesting_too_deep');
    expect(
      errorOf('chat', { model: 'gpt-4o', messages: [], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: nested(10_000) } } }).code,
    ).toBe('nesting_too_deep');
  });

  it('accepts unknown extra fields', () => {
    expect(() =>
      estimateRequestSync('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi', extra: { a: 1 } }], temperature: 0, foo: 'bar' }, options),
    ).not.toThrow();
  });

  it('throws nothing but EstimateInputError on arbitrary JSON bodies', () => {
    const model = fc.constantFrom('gpt-4o', 'gpt-3.5-turbo', 'o3', 'text-embedding-3-small', 'unknown-model', '');
    const part = fc.oneof(
      fc.record({ type: fc.constant('text'), text: fc.oneof(fc.string(), fc.integer()) }),
      fc.record({ type: fc.constant('image_url'), image_url: fc.oneof(fc.string(), fc.record({ url: fc.string(), detail: fc.string() })) }),
      fc.record({ type: fc.constant('input_audio'), input_audio: fc.record({ data: fc.string(), format: fc.string() }) }),
      fc.jsonValue(),
    );
    const message = fc.record(
      {
        role: fc.constantFrom('system', 'user', 'assistant', 'tool', 'function', 'developer', 'x'),
        content: fc.oneof(fc.string(), fc.constant(null), fc.array(part, { maxLength: 3 }), fc.jsonValue()),
        name: fc.oneof(fc.string(), fc.jsonValue()),
        tool_calls: fc.jsonValue(),
        function_call: fc.oneof(fc.record({ name: fc.string(), arguments: fc.string() }), fc.jsonValue()),
      },
      { requiredKeys: ['role'] },
    );
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record(
        {
          model,
          messages: fc.oneof(fc.array(message, { maxLength: 4 }), fc.jsonValue()),
          prompt: fc.jsonValue(),
          input: fc.oneof(fc.string(), fc.array(fc.oneof(message, fc.jsonValue()), { maxLength: 4 }), fc.jsonValue()),
          tools: fc.jsonValue(),
          functions: fc.jsonValue(),
          tool_choice: fc.jsonValue(),
          response_format: fc.jsonValue(),
          max_tokens: fc.jsonValue(),
          n: fc.jsonValue(),
          instructions: fc.jsonValue(),
        },
        { requiredKeys: ['model'] },
      ),
    );
    fc.assert(
      fc.property(fc.constantFrom(...endpoints), body, (endpoint, candidate) => {
        try {
          const estimate = estimateRequestSync(endpoint, candidate, options);
          return Number.isSafeInteger(estimate.promptTokens) && estimate.promptTokens >= 0 && Number.isSafeInteger(estimate.reservedMicroUsd);
        } catch (error) {
          return error instanceof EstimateInputError;
        }
      }),
      { numRuns: Number(process.env['ESTIMATE_FUZZ_RUNS'] ?? 2_000) },
    );
  });
});
