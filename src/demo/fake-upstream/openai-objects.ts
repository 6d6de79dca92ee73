/** Objects in the OpenAI API's own shapes: usage blocks, models, Responses. */
import { randomBytes } from 'node:crypto';

export function usageBlock(
  endpoint: string,
  prompt: number,
  cached: number,
  completion: number,
  reasoning: number,
  audio: { prompt: number; completion: number } = { prompt: 0, completion: 0 },
): Record<string, unknown> {
  if (endpoint === 'responses') {
    return {
      input_tokens: prompt,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: completion,
      output_tokens_details: { reasoning_tokens: reasoning },
      total_tokens: prompt + completion,
    };
  }
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: audio.prompt },
    completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: audio.completion, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

/** The id of a response's output message: item ids are unique across responses, as the API's are. */
export function messageIdOf(responseId: string): string {
  return `msg_${responseId.replace(/^resp_/, '')}`;
}

/** Built-in tool call items of a Responses `output`, as the API returns them (ids unique to the response). */
export function toolCallItems(
  calls: { webSearch: number; fileSearch: number; codeInterpreter: number; imageGeneration: number },
  responseId = `resp_${randomBytes(8).toString('hex')}`,
): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  const suffix = responseId.replace(/^resp_/, '');
  for (let i = 0; i < calls.webSearch; i += 1) {
    items.push({ type: 'web_search_call', id: `ws_${suffix}${i}`, status: 'completed', action: { type: 'search', query: 'foxes' } });
  }
  for (let i = 0; i < calls.fileSearch; i += 1) {
    items.push({ type: 'file_search_call', id: `fs_${suffix}${i}`, status: 'completed', queries: ['foxes'], results: null });
  }
  for (let i = 0; i < calls.codeInterpreter; i += 1) {
    items.push({ type: 'code_interpreter_call', id: `ci_${suffix}${i}`, status: 'completed', code: 'print(1)', container_id: `cntr_fake${i}`, outputs: null });
  }
  for (let i = 0; i < calls.imageGeneration; i += 1) {
    items.push({ type: 'image_generation_call', id: `ig_${suffix}${i}`, status: 'completed', result: 'aGVsbG8=' });
  }
  return items;
}

export function modelObject(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 1_700_000_000, owned_by: 'system' };
}

export function responseObject(
  model: string,
  text: string,
  status: string,
  usage: unknown,
  id = `resp_${randomBytes(8).toString('hex')}`,
  extra: { serviceTier?: string; tools?: Record<string, unknown>[] } = {},
): Record<string, unknown> {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output: [
      ...(extra.tools ?? []),
      ...(text === ''
        ? []
        : [
            {
              type: 'message',
              id: messageIdOf(id),
              status: 'completed',
              role: 'assistant',
              content: [{ type: 'output_text', text, annotations: [] }],
            },
          ]),
    ],
    ...(extra.serviceTier === undefined ? {} : { service_tier: extra.serviceTier }),
    usage,
    error: null,
    incomplete_details: null,
    instructions: null,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
  };
}
