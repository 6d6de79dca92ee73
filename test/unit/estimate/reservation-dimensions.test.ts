/**
 * A reservation covers what the request asks for beyond text: the priority tier, audio output,
 * built-in tools (at least one call each; `max_tool_calls` or the documented default).
 */
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, costMicroUsd, estimateRequestSync, resolvePrice } from '../../../src/estimate/index.js';
import { approximateAudioTokens } from '../../../src/estimate/count-parts.js';
import { DEFAULT_TOOL_CALLS } from '../../../src/estimate/price-request.js';
import { mergePriceTable, priceTableOverrideSchema } from '../../../src/estimate/prices.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1_000 };
const messages = [{ role: 'user', content: 'Tell me about foxes.' }];

describe('service tier', () => {
  it('reserves a priority request at priority prices and a flex one at flex prices', () => {
    const standard = estimateRequestSync('chat', { model: 'gpt-5', messages, max_completion_tokens: 2_000 }, options);
    const priority = estimateRequestSync('chat', { model: 'gpt-5', messages, max_completion_tokens: 2_000, service_tier: 'priority' }, options);
    const flex = estimateRequestSync('responses', { model: 'o3', input: 'Hi', max_output_tokens: 2_000, service_tier: 'flex' }, options);
    expect(standard.serviceTier).toBe('standard');
    expect(priority.serviceTier).toBe('priority');
    // gpt-5 priority: $2.50 in, $20 out per 1M.
    expect(priority.reservedMicroUsd).toBe(Math.ceil((priority.promptTokens * 2_500_000 + 2_000 * 20_000_000) / 1e6));
    expect(priority.reservedMicroUsd).toBeGreaterThan(standard.reservedMicroUsd);
    expect(priority.completionMicroUsdPer1M).toBe(20_000_000);
    // o3 flex: $1 in, $4 out.
    expect(flex.reservedMicroUsd).toBe(Math.ceil((flex.promptTokens * 1_000_000 + 2_000 * 4_000_000) / 1e6));
  });

  it('reserves auto and default at the standard price', () => {
    for (const tier of ['auto', 'default', undefined]) {
      const estimate = estimateRequestSync('chat', { model: 'gpt-4o', messages, max_tokens: 10, service_tier: tier }, options);
      expect(estimate.serviceTier).toBe('standard');
    }
  });
});

describe('audio output', () => {
  it('reserves every completion token at the audio output price', () => {
    const body = { model: 'gpt-4o-audio-preview', messages, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, max_tokens: 1_000 };
    const estimate = estimateRequestSync('chat', body, options);
    expect(estimate.audioOutput).toBe(true);
    // $2.50 / 1M text in, $80 / 1M audio out.
    expect(estimate.reservedMicroUsd).toBe(Math.ceil((estimate.promptTokens * 2_500_000 + 1_000 * 80_000_000) / 1e6));
    expect(estimate.completionMicroUsdPer1M).toBe(80_000_000);
  });

  it('reserves audio in the prompt at the audio input price', () => {
    // 64 000 bytes of WAV ≈ 2 s ≈ 21 audio tokens by count-parts.ts's approximation.
    const data = Buffer.alloc(64_000).toString('base64');
    const audio = approximateAudioTokens(data.length, 'wav');
    const body = {
      model: 'gpt-4o-audio-preview',
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data, format: 'wav' } }] }],
      max_tokens: 10,
    };
    const estimate = estimateRequestSync('chat', body, options);
    expect(audio).toBe(21);
    const text = estimate.promptTokens - audio;
    // $2.50 / 1M text in, $40 / 1M audio in, $10 / 1M text out.
    expect(estimate.reservedMicroUsd).toBe(Math.ceil((text * 2_500_000 + audio * 40_000_000 + 10 * 10_000_000) / 1e6));
  });

  it('reserves audio output on a model without audio prices at the highest audio price', () => {
    const estimate = estimateRequestSync('chat', { model: 'gpt-4o', messages, modalities: ['text', 'audio'], max_tokens: 100 }, options);
    expect(estimate.price.assumed).toContain('audio');
    expect(estimate.completionMicroUsdPer1M).toBe(80_000_000);
  });
});

describe('built-in tools', () => {
  const price = resolvePrice('gpt-4.1', builtinPriceTable);
  const tokensOnly = (promptTokens: number, completion: number) => costMicroUsd({ promptTokens, completionTokens: completion }, price);
  // Search tools' results are input Tollgate cannot count: reserved at a bound that rate limits do
  // not take (unseen-input.test.ts); the tools themselves are reserved all the same.
  const counted = (estimate: { promptTokens: number; unseen: { boundTokens: number } }) => estimate.promptTokens - estimate.unseen.boundTokens;

  it('reserves the default number of calls of each declared search tool and one container', () => {
    const body = {
      model: 'gpt-4.1',
      input: 'Search the web and my files.',
      max_output_tokens: 500,
      tools: [
        { type: 'web_search' },
        { type: 'file_search', vector_store_ids: ['vs_1'] },
        { type: 'code_interpreter', container: { type: 'auto', memory_limit: '4g' } },
      ],
    };
    const estimate = estimateRequestSync('responses', body, options);
    expect(estimate.toolCallsReserved).toEqual({ webSearch: DEFAULT_TOOL_CALLS, fileSearch: DEFAULT_TOOL_CALLS, codeInterpreter: 1 });
    expect(estimate.toolRates).toMatchObject({ webSearchCall: 10_000, fileSearchCall: 2_500, codeInterpreterContainer: 120_000 });
    expect(estimate.reservedMicroUsd).toBe(tokensOnly(counted(estimate), 500) + DEFAULT_TOOL_CALLS * (10_000 + 2_500) + 120_000);
  });

  it('reserves max_tool_calls calls of the dearest declared tool when the request bounds them', () => {
    const body = {
      model: 'gpt-4.1',
      input: 'Go.',
      max_output_tokens: 100,
      max_tool_calls: 7,
      tools: [{ type: 'web_search_preview' }, { type: 'file_search' }],
    };
    const estimate = estimateRequestSync('responses', body, options);
    // web_search_preview on a non-reasoning model: $25 / 1k calls.
    expect(estimate.toolCallsReserved).toEqual({ webSearch: 7 });
    expect(estimate.toolRates.webSearchCall).toBe(25_000);
    expect(estimate.reservedMicroUsd).toBe(tokensOnly(counted(estimate), 100) + 7 * 25_000);
  });

  it('prices web_search_preview on a reasoning model at the standard search price', () => {
    const estimate = estimateRequestSync('responses', { model: 'o4-mini', input: 'Go.', tools: [{ type: 'web_search_preview' }] }, options);
    expect(estimate.toolRates.webSearchCall).toBe(10_000);
  });

  it('reserves an image at the price of its model, quality and size, the dearest for auto', () => {
    const sized = estimateRequestSync(
      'responses',
      { model: 'gpt-4.1', input: 'Draw a fox.', tools: [{ type: 'image_generation', model: 'gpt-image-1-mini', quality: 'low', size: '1024x1024' }] },
      options,
    );
    expect(sized.toolRates.imageGenerationCall).toBe(5_000);
    const auto = estimateRequestSync('responses', { model: 'gpt-4.1', input: 'Draw a fox.', tools: [{ type: 'image_generation' }] }, options);
    expect(auto.toolRates.imageGenerationCall).toBe(250_000);
    expect(auto.toolCallsReserved).toEqual({ imageGeneration: DEFAULT_TOOL_CALLS });
  });

  it('reserves and bills one web search per request to a chat search model', () => {
    const estimate = estimateRequestSync('chat', { model: 'gpt-4o-mini-search-preview', messages, max_tokens: 100 }, options);
    expect(estimate.toolCallsReserved).toEqual({ webSearch: 1 });
    expect(estimate.toolCallsPerRequest).toEqual({ webSearch: 1 });
    // $0.15 / $0.60 per 1M tokens + $25 / 1k searches.
    expect(estimate.reservedMicroUsd).toBe(Math.ceil((estimate.promptTokens * 150_000 + 100 * 600_000) / 1e6) + 25_000);
    expect(estimateRequestSync('chat', { model: 'gpt-4o-mini', messages }, options).toolCallsPerRequest).toEqual({});
  });

  it('reserves nothing for tools on other endpoints or for function tools', () => {
    const estimate = estimateRequestSync('responses', { model: 'gpt-4.1', input: 'x', tools: [{ type: 'function', name: 'f', parameters: {} }] }, options);
    expect(estimate.toolCallsReserved).toEqual({});
    const chat = estimateRequestSync('chat', { model: 'gpt-4.1', messages, tools: [{ type: 'function', function: { name: 'f' } }] }, options);
    expect(chat.toolCallsReserved).toEqual({});
  });
});

describe('unknown models', () => {
  it('are reserved at the highest prices of the table, or at the configured fallback for keys without a USD cap', () => {
    const body = { model: 'my-llama', messages, max_tokens: 1_000 };
    const highest = estimateRequestSync('chat', body, options);
    expect(highest.price.known).toBe(false);
    expect(highest.completionMicroUsdPer1M).toBe(builtinPriceTable.fallback.outputMicroUsdPer1M);
    const cheap = mergePriceTable(builtinPriceTable, priceTableOverrideSchema.parse({ fallback: { input: 0.1, output: 0.1 } }));
    expect(estimateRequestSync('chat', body, { ...options, prices: cheap }).completionMicroUsdPer1M).toBe(100_000);
    expect(estimateRequestSync('chat', body, { ...options, prices: cheap, highestForUnknown: true }).reservedMicroUsd).toBe(highest.reservedMicroUsd);
  });
});
