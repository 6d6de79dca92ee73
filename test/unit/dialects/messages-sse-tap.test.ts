/** The SSE tap reads Anthropic's Messages events: usage from message_start and message_delta, the text generated, the end, errors, and a cut that ends as max_tokens would. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DIALECTS } from '../../../src/dialects/index.js';
import { SseTap } from '../../../src/dialects/sse-tap.js';

const event = (type: string, payload: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
const start = event('message_start', {
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-opus-4-6',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: {
      input_tokens: 20,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 40,
      cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
      output_tokens: 1,
    },
  },
});
const thinking = [
  event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  event('ping', {}),
  event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Let me think' } }),
  event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'c2lnbmF0dXJl' } }),
  event('content_block_stop', { index: 0 }),
].join('');
const text = [
  event('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
  ...['Héllo', ' wörld', ' 🦊', ' 狐狸'].map((t) => event('content_block_delta', { index: 1, delta: { type: 'text_delta', text: t } })),
  event('content_block_stop', { index: 1 }),
].join('');
const tool = [
  event('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'search', input: {} } }),
  event('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"q":' } }),
  event('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '"fox"}' } }),
  event('content_block_stop', { index: 2 }),
].join('');
const end = event('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 57 } }) + event('message_stop', {});
const stream = start + thinking + text + tool + end;

function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    parts.push(bytes.subarray(from, point));
    from = point;
  }
  parts.push(bytes.subarray(from));
  return parts.filter((p) => p.length > 0);
}

describe('SseTap on Anthropic Messages streams', () => {
  it('forwards every byte and reads the final usage, text and end, for any split', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 40 }), (cuts) => {
        const tap = new SseTap({ dialect: DIALECTS.messages, stripUsageChunk: true });
        const out: Uint8Array[] = [];
        for (const part of splitAt(Buffer.from(stream), cuts)) {
          const forward = tap.push(part);
          if (forward) out.push(forward);
        }
        expect(tap.finish()).toBeNull();
        expect(Buffer.concat(out).toString()).toBe(stream);
        // The whole prompt: input + cache reads + 5m and 1h writes; output from message_delta (cumulative).
        expect(tap.usage).toEqual({
          promptTokens: 90,
          cachedTokens: 40,
          completionTokens: 57,
          reasoningTokens: 0,
          cacheWrite5mTokens: 10,
          cacheWrite1hTokens: 20,
        });
        expect(tap.completionText()).toBe('Let me thinkHéllo wörld 🦊 狐狸search{"q":"fox"}');
        expect(tap.finished).toBe(true);
        expect(tap.error).toBeUndefined();
      }),
    );
  });

  it('takes the input fields a newer message_delta repeats, over message_start', () => {
    const tap = new SseTap({ dialect: DIALECTS.messages, stripUsageChunk: false });
    tap.push(Buffer.from(start));
    tap.push(
      Buffer.from(event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 25, cache_read_input_tokens: null, output_tokens: 9 } })),
    );
    expect(tap.usage).toMatchObject({ promptTokens: 95, cachedTokens: 40, completionTokens: 9 });
  });

  it('has no final usage before message_delta, but the exact prompt and the text so far', () => {
    const tap = new SseTap({ dialect: DIALECTS.messages, stripUsageChunk: false });
    tap.push(Buffer.from(start + thinking));
    expect(tap.usage).toBeUndefined();
    expect(tap.finished).toBe(false);
    expect(tap.promptUsage).toMatchObject({ promptTokens: 90, cachedTokens: 40, cacheWrite1hTokens: 20 });
    expect(tap.completionText()).toBe('Let me think');
    // Nothing before message_start.
    expect(new SseTap({ dialect: DIALECTS.messages, stripUsageChunk: false }).promptUsage).toBeUndefined();
  });

  it('reads an error event as the upstream error, with Anthropic error type as its code', () => {
    const tap = new SseTap({ dialect: DIALECTS.messages, stripUsageChunk: false });
    tap.push(Buffer.from(start + event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })));
    expect(tap.error).toEqual({ message: 'Overloaded', code: 'overloaded_error' });
    expect(tap.finished).toBe(false);
  });

  it('cuts at the allowance and ends the message as max_tokens would: open blocks stopped, message_delta, message_stop', () => {
    const tap = new SseTap({ dialect: DIALECTS.messages, stripUsageChunk: false, allowance: { tokens: 3, count: (t) => t.split(' ').filter(Boolean).length } });
    const out: Uint8Array[] = [];
    for (const part of splitAt(Buffer.from(start + text + tool + end), [])) {
      const forward = tap.push(part);
      if (forward) out.push(forward);
      if (tap.overAllowance) break;
    }
    expect(tap.overAllowance).toBe(true);
    const relayed = Buffer.concat(out).toString();
    // Relayed up to the delta that reached the allowance, nothing after it.
    expect(relayed.endsWith(event('content_block_delta', { index: 1, delta: { type: 'text_delta', text: ' 🦊' } }))).toBe(true);
    const ending = Buffer.from(tap.cutEnding(90, false)).toString();
    expect(ending).toBe(
      event('content_block_stop', { index: 1 }) +
        event('message_delta', { delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 3 } }) +
        event('message_stop', {}),
    );
  });
});
