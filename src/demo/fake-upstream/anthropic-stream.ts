/**
 * A streamed Messages answer in Anthropic's event sequence: `message_start`, then per content
 * block `content_block_start`, `content_block_delta`s (`thinking_delta` + `signature_delta`,
 * `text_delta`, `input_json_delta`) and `content_block_stop`, with a `ping` after the first
 * block starts, then `message_delta` (stop reason, cumulative `output_tokens`) and
 * `message_stop`. Misbehaves as the scenario asks: slow deltas, a break, a hang, an error event.
 * Output is billed as it is generated (thinking not shown too); a client that disconnects stops
 * the generation and pays for the prompt and the output until then.
 */
import type { ServerResponse } from 'node:http';
import { num, sleep, think, tokens, type Scenario } from './scenario.js';
import type { FakeBilling, RecordedRequest } from './types.js';

export interface MessagePlan {
  readonly id: string;
  readonly model: string;
  /** Thinking tokens billed but not shown (Claude 4 streams a summary of its thinking). */
  readonly hiddenThinking: number;
  readonly thinking: readonly string[];
  readonly answer: readonly string[];
  readonly tool: string | undefined;
  readonly stopReason: string;
  readonly usage: { readonly input: number; readonly cacheRead: number; readonly write5m: number; readonly write1h: number };
  readonly scenario: Scenario;
}

export async function streamMessage(
  res: ServerResponse,
  plan: MessagePlan,
  record: RecordedRequest,
  billPrompt: Omit<FakeBilling, 'completionTokens'>,
): Promise<void> {
  const { scenario, model } = plan;
  const delay = num(scenario, 'delay') ?? 0;
  const breakAfter = num(scenario, 'breakAfter');
  const hangAfter = num(scenario, 'hangAfter');
  const errorAfter = num(scenario, 'errorAfter');
  record.status = 200;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': record.id,
    'anthropic-organization-id': 'fake-anthropic-org-do-not-leak',
  });
  let flushed: Promise<void> = Promise.resolve();
  const write = (type: string, payload: Record<string, unknown>): boolean => {
    if (res.destroyed || res.writableEnded) return false;
    const text = `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
    flushed = new Promise((resolve) => res.write(text, () => resolve()));
    return true;
  };
  let sentTokens = 0;
  /** Thinking not shown, billed as it is generated whether or not the client stays. */
  let thought = 0;
  const bill = (): void => {
    record.billed = { ...billPrompt, completionTokens: thought + sentTokens };
  };

  write('message_start', {
    message: { id: plan.id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usageObject(plan, 1) },
  });
  bill();

  // Each piece of output is one delta; `chunks` counts them for breakAfter/hangAfter/errorAfter.
  let chunks = 0;
  /** Sends one delta, misbehaving first if the scenario says so; false when the stream must stop. */
  const delta = async (index: number, payload: Record<string, unknown>, text: string): Promise<boolean> => {
    await sleep(delay);
    if (res.destroyed) return false;
    if (breakAfter !== undefined && chunks >= breakAfter) {
      await flushed;
      res.destroy();
      return false;
    }
    if (hangAfter !== undefined && chunks >= hangAfter) return false;
    if (errorAfter !== undefined && chunks >= errorAfter) {
      write('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
      record.finished = true;
      res.end();
      return false;
    }
    if (!write('content_block_delta', { index, delta: payload })) return false;
    sentTokens += tokens(model, text);
    chunks += 1;
    record.chunksSent = chunks;
    bill();
    return true;
  };

  let index = 0;
  let pinged = false;
  const start = (block: Record<string, unknown>): void => {
    write('content_block_start', { index, content_block: block });
    if (!pinged) {
      pinged = true;
      write('ping', {});
    }
  };
  if (plan.thinking.length > 0 || plan.hiddenThinking > 0) {
    start({ type: 'thinking', thinking: '', signature: '' });
    if (!(await think(plan.hiddenThinking, num(scenario, 'reasoningMs') ?? 0, res, (tokens) => ((thought = tokens), bill())))) return;
    for (const word of plan.thinking) if (!(await delta(index, { type: 'thinking_delta', thinking: word }, word))) return;
    write('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'fake-signature' } });
    write('content_block_stop', { index });
    index += 1;
  }
  if (plan.answer.length > 0) {
    start({ type: 'text', text: '' });
    for (const word of plan.answer) if (!(await delta(index, { type: 'text_delta', text: word }, word))) return;
    write('content_block_stop', { index });
    index += 1;
  }
  if (plan.tool !== undefined) {
    start({ type: 'tool_use', id: 'toolu_fake', name: plan.tool, input: {} });
    sentTokens += tokens(model, plan.tool);
    const json = JSON.stringify(TOOL_INPUT);
    const half = Math.floor(json.length / 2);
    for (const part of [json.slice(0, half), json.slice(half)]) if (!(await delta(index, { type: 'input_json_delta', partial_json: part }, ''))) return;
    write('content_block_stop', { index });
  }
  const output = outputTokens(plan);
  write('message_delta', { delta: { stop_reason: plan.stopReason, stop_sequence: null }, usage: { output_tokens: output } });
  write('message_stop', {});
  record.billed = { ...billPrompt, completionTokens: output };
  record.finished = true;
  res.end();
}

/** The input a fake tool call carries. */
export const TOOL_INPUT = { query: 'quick brown fox' };

/** Output tokens of a whole answer, as the fake bills them. */
export function outputTokens(plan: MessagePlan): number {
  let total = plan.hiddenThinking + tokens(plan.model, plan.thinking.join('')) + tokens(plan.model, plan.answer.join(''));
  if (plan.tool !== undefined) total += tokens(plan.model, plan.tool) + tokens(plan.model, JSON.stringify(TOOL_INPUT));
  return total;
}

/** Anthropic's `usage` object. */
export function usageObject(plan: MessagePlan, output: number): Record<string, unknown> {
  const { input, cacheRead, write5m, write1h } = plan.usage;
  return {
    input_tokens: input,
    cache_creation_input_tokens: write5m + write1h,
    cache_read_input_tokens: cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: write5m, ephemeral_1h_input_tokens: write1h },
    output_tokens: output,
    service_tier: 'standard',
  };
}
