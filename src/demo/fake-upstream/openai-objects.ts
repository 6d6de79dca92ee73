/** Objects in the OpenAI API's own shapes: usage blocks, models, Responses. */
import { randomBytes } from 'node:crypto';

export function usageBlock(endpoint: string, prompt: number, cached: number, completion: number, reasoning: number): Record<string, unknown> {
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
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
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
): Record<string, unknown> {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output:
      text === ''
        ? []
        : [
            {
              type: 'message',
              id: 'msg_fake',
              status: 'completed',
              role: 'assistant',
              content: [{ type: 'output_text', text, annotations: [] }],
            },
          ],
    usage,
    error: null,
    incomplete_details: null,
    instructions: null,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
  };
}
