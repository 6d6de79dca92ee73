/**
 * Usage says more than tokens: audio tokens, the service tier used, and (Responses) built-in tool
 * calls in `output` — read from JSON answers and from streams alike.
 */
import { describe, expect, it } from 'vitest';
import { DIALECTS } from '../../../src/dialects/index.js';
import { SseTap } from '../../../src/dialects/sse-tap.js';
import { readToolCalls, usageFromJsonBytes, usageOfAnswer } from '../../../src/dialects/usage.js';

const chatAnswer = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'says "service_tier":"flex" out loud', audio: { id: 'a', data: 'AAAA', transcript: 'hi' } } }],
  usage: {
    prompt_tokens: 120,
    completion_tokens: 300,
    total_tokens: 420,
    prompt_tokens_details: { cached_tokens: 20, audio_tokens: 50 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 250 },
  },
  service_tier: 'priority',
  system_fingerprint: 'fp',
};

const responsesAnswer = {
  id: 'resp_1',
  object: 'response',
  status: 'completed',
  service_tier: 'flex',
  output: [
    { type: 'web_search_call', id: 'ws_1', status: 'completed' },
    { type: 'web_search_call', id: 'ws_2', status: 'completed' },
    { type: 'web_search_call', id: 'ws_3', status: 'failed' },
    { type: 'file_search_call', id: 'fs_1', status: 'completed' },
    { type: 'code_interpreter_call', id: 'ci_1', status: 'completed', container_id: 'cntr_a' },
    { type: 'code_interpreter_call', id: 'ci_2', status: 'completed', container_id: 'cntr_a' },
    { type: 'code_interpreter_call', id: 'ci_3', status: 'completed', container_id: 'cntr_b' },
    { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: 'aGk=' },
    { type: 'message', id: 'msg', content: [{ type: 'output_text', text: '{"type":"web_search_call"}' }] },
  ],
  usage: { input_tokens: 900, input_tokens_details: { cached_tokens: 0 }, output_tokens: 80, output_tokens_details: { reasoning_tokens: 40 } },
};

describe('usage beyond tokens', () => {
  it('reads audio tokens and the service tier of a chat answer without being fooled by its text', () => {
    expect(usageFromJsonBytes(Buffer.from(JSON.stringify(chatAnswer)))).toEqual({
      promptTokens: 120,
      cachedTokens: 20,
      completionTokens: 300,
      reasoningTokens: 0,
      audioPromptTokens: 50,
      audioCompletionTokens: 250,
      serviceTier: 'priority',
    });
  });

  it('leaves audio and tier out when the answer reports none (plain answers read as before)', () => {
    const plain = { usage: { prompt_tokens: 1, completion_tokens: 2, prompt_tokens_details: { audio_tokens: 0 } } };
    expect(usageFromJsonBytes(Buffer.from(JSON.stringify(plain)))).toEqual({ promptTokens: 1, cachedTokens: 0, completionTokens: 2, reasoningTokens: 0 });
  });

  it('counts the built-in tool calls of a Responses answer: failed calls not, containers once each', () => {
    expect(readToolCalls(responsesAnswer.output)).toEqual({ webSearch: 2, fileSearch: 1, codeInterpreter: 2, imageGeneration: 1 });
    expect(usageFromJsonBytes(Buffer.from(JSON.stringify(responsesAnswer)))).toEqual({
      promptTokens: 900,
      cachedTokens: 0,
      completionTokens: 80,
      reasoningTokens: 40,
      serviceTier: 'flex',
      toolCalls: { webSearch: 2, fileSearch: 1, codeInterpreter: 2, imageGeneration: 1 },
    });
    expect(readToolCalls([{ type: 'message' }])).toBeUndefined();
    expect(readToolCalls('nope')).toBeUndefined();
  });

  it('reads the tier and audio from the usage chunk of a chat stream', () => {
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false });
    const chunk = { id: 'c', object: 'chat.completion.chunk', service_tier: 'priority', choices: [], usage: chatAnswer.usage };
    tap.push(Buffer.from(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`));
    expect(tap.usage).toMatchObject({ serviceTier: 'priority', audioPromptTokens: 50, audioCompletionTokens: 250 });
  });

  it('reads tool calls and the tier from the completed event of a Responses stream', () => {
    const tap = new SseTap({ dialect: DIALECTS.responses, stripUsageChunk: false });
    tap.push(Buffer.from(`event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: responsesAnswer })}\n\n`));
    expect(tap.usage).toMatchObject({ serviceTier: 'flex', toolCalls: { webSearch: 2, fileSearch: 1, codeInterpreter: 2, imageGeneration: 1 } });
  });

  it('reads a whole answer object however it arrived', () => {
    expect(usageOfAnswer({ usage: { prompt_tokens: 3, completion_tokens: 4 }, service_tier: 'default' })).toMatchObject({ serviceTier: 'default' });
    expect(usageOfAnswer({ service_tier: 'priority' })).toBeUndefined();
  });
});
