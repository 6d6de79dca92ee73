import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, encodingForModel, estimateRequestSync } from '../../../src/estimate/index.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 100 };
const o200kEncoder = new Tiktoken(o200k);
const cl100kEncoder = new Tiktoken(cl100k);
const tokensO200k = (text: string): number => o200kEncoder.encode(text, [], []).length;
const tokensCl100k = (text: string): number => cl100kEncoder.encode(text, [], []).length;

describe('each endpoint counts its own input shapes', () => {
  it('counts completions prompts given as text, token ids or lists of either', () => {
    const text = 'Once upon a time, in a land far away,';
    const model = 'gpt-3.5-turbo-instruct';
    expect(estimateRequestSync('completions', { model, prompt: text }, options).promptTokens).toBe(tokensCl100k(text));
    expect(estimateRequestSync('completions', { model, prompt: [text, 'and then'] }, options).promptTokens).toBe(tokensCl100k(text) + tokensCl100k('and then'));
    expect(estimateRequestSync('completions', { model, prompt: [1, 2, 3, 4] }, options).promptTokens).toBe(4);
    expect(estimateRequestSync('completions', { model, prompt: [[1, 2], [3]] }, options)).toMatchObject({ promptTokens: 3, promptCount: 2 });
  });

  it('counts embeddings inputs without any framing', () => {
    const inputs = ['The food was delicious and the waiter…', 'さようなら'];
    const estimate = estimateRequestSync('embeddings', { model: 'text-embedding-3-large', input: inputs }, options);
    expect(estimate.promptTokens).toBe(tokensCl100k(inputs[0] as string) + tokensCl100k(inputs[1] as string));
    expect(estimate.encoding).toBe('cl100k_base');
  });

  it('counts a Responses string input like a single user message', () => {
    const chat = estimateRequestSync('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'Tell me a joke.' }] }, options);
    const responses = estimateRequestSync('responses', { model: 'gpt-4o', input: 'Tell me a joke.' }, options);
    expect(responses.promptTokens).toBe(chat.promptTokens);
  });

  it('counts Responses items: messages with parts, instructions, calls, outputs and reasoning summaries', () => {
    const body = {
      model: 'o4-mini',
      instructions: 'Be brief.',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is the weather in Paris?' },
            { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Need the weather tool.' }], encrypted_content: 'opaque' },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'c1', output: '{"temp":21}' },
      ],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    };
    const estimate = estimateRequestSync('responses', body, options);
    const text = (s: string): number => tokensO200k(s);
    const tools = text('namespace functions {\n\n// Weather by city\ntype get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions') + 9;
    const expected =
      3 +
      text('system') +
      text('Be brief.') +
      3 +
      text('user') +
      text('What is the weather in Paris?') +
      Math.ceil(1536 * 1.72) + // a remote image, at the most one image bills on o4-mini
      text('Need the weather tool.') +
      3 +
      text('get_weather') +
      text('{"city":"Paris"}') +
      3 +
      text('{"temp":21}') +
      tools +
      2; // o4-mini is a reasoning model
    expect(estimate.promptTokens).toBe(expected);
    expect(estimate.imageTokens).toBe(Math.ceil(1536 * 1.72));
  });

  // Was a fixed 8,000 tokens for web search: what a search reads is billed as input and has no
  // such bound, so it is now reserved at what the window leaves (unseen-input.test.ts).
  it('reserves built-in Responses tools whose results are billed as input at what the window leaves', () => {
    const without = estimateRequestSync('responses', { model: 'gpt-4.1', input: 'news?' }, options);
    const withSearch = estimateRequestSync('responses', { model: 'gpt-4.1', input: 'news?', tools: [{ type: 'web_search' }] }, options);
    expect(withSearch.promptTokens).toBe(1_047_576);
    expect(withSearch.promptTokens - without.promptTokens).toBe(withSearch.unseen.reservedTokens);
    expect(withSearch.unseen.kinds).toEqual({ tool_results: 1 });
  });

  it('counts assistant tool calls and tool results in chat', () => {
    const base = estimateRequestSync('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, options).promptTokens;
    const estimate = estimateRequestSync(
      'chat',
      {
        model: 'gpt-4o',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'result text' },
        ],
      },
      options,
    ).promptTokens;
    const assistant = 3 + tokensO200k('assistant') + tokensO200k('lookup') + tokensO200k('{"q":"x"}') + 3;
    const tool = 3 + tokensO200k('tool') + tokensO200k('result text');
    expect(estimate).toBe(base + assistant + tool);
  });

  it('adds a json_schema response format as its compact JSON', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const base = estimateRequestSync('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'q' }] }, options).promptTokens;
    const withFormat = estimateRequestSync(
      'chat',
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'q' }], response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } } },
      options,
    ).promptTokens;
    expect(withFormat - base).toBe(8 + tokensO200k('answer') + tokensO200k(JSON.stringify(schema)));
  });
});

describe('model names map to encodings', () => {
  it.each([
    ['gpt-4o', 'o200k_base'],
    ['gpt-4o-mini-2024-07-18', 'o200k_base'],
    ['gpt-4.1-nano', 'o200k_base'],
    ['gpt-4.5-preview', 'o200k_base'],
    ['gpt-5.2', 'o200k_base'],
    ['o1', 'o200k_base'],
    ['o3-mini', 'o200k_base'],
    ['o4-mini-2025-04-16', 'o200k_base'],
    ['chatgpt-4o-latest', 'o200k_base'],
    ['ft:gpt-4o-mini:acme::x1', 'o200k_base'],
    ['ft:gpt-3.5-turbo-0125:acme::x1', 'cl100k_base'],
    ['openai/gpt-4-turbo', 'cl100k_base'],
    ['azure/gpt-35-turbo', 'cl100k_base'],
    ['gpt-4', 'cl100k_base'],
    ['gpt-4-0613', 'cl100k_base'],
    ['gpt-3.5-turbo-16k', 'cl100k_base'],
    ['text-embedding-3-small', 'cl100k_base'],
    ['text-embedding-ada-002', 'cl100k_base'],
    ['some-future-model', 'o200k_base'],
  ])('counts %s with %s', (model, encoding) => {
    expect(encodingForModel(model)).toBe(encoding);
  });
});
