/** The SSE tap forwards bytes as sent and reads usage, text and endings, however the bytes are split. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DIALECTS } from '../../../src/dialects/index.js';
import { SseTap } from '../../../src/dialects/sse-tap.js';

const chunk = (content: string) =>
  `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}],"usage":null}\n\n`;
const usageChunk =
  'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}}\n\n';
const role =
  'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}\n\n';
const stop = 'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n';
const done = 'data: [DONE]\n\n';

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

function run(tap: SseTap, parts: Buffer[]): Buffer {
  const out: Uint8Array[] = [];
  for (const part of parts) {
    const forward = tap.push(part);
    if (forward) out.push(forward);
  }
  const tail = tap.finish();
  if (tail) out.push(tail);
  return Buffer.concat(out);
}

describe('SseTap', () => {
  const words = ['Héllo', ' wörld', ' 🦊', ' 狐狸', ' done'];
  const stream = role + words.map(chunk).join('') + stop + usageChunk + done;

  /** What the client would have received without include_usage: no usage chunk, no `"usage":null` member. */
  const unasked = (text: string): string => text.replace(usageChunk, '').replaceAll(',"usage":null', '');

  it('withholds exactly the usage chunk and the usage:null members and forwards every other byte, for any split', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 40 }), (cuts) => {
        const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: true });
        const out = run(tap, splitAt(Buffer.from(stream), cuts));
        expect(out.toString()).toBe(unasked(stream));
        expect(tap.usage).toEqual({ promptTokens: 11, cachedTokens: 3, completionTokens: 7, reasoningTokens: 2 });
        expect(tap.completionText()).toBe(words.join(''));
        expect(tap.finished).toBe(true);
      }),
    );
  });

  it('keeps a usage:null inside a string and strips the member from a last event without its blank line', () => {
    const quoting = chunk('say ,"usage":null please');
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: true });
    const out = run(tap, [Buffer.from(role + quoting + stop.slice(0, -2))]);
    expect(out.toString()).toBe(unasked(role) + quoting.replace(',"usage":null}', '}') + unasked(stop).slice(0, -2));
    expect(tap.completionText()).toBe('say ,"usage":null please');
  });

  it('forwards every chunk unchanged (same objects) when nothing is stripped', () => {
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false });
    const parts = splitAt(Buffer.from(stream), [5, 100, 101, 350]);
    for (const part of parts) expect(tap.push(part)).toBe(part);
    expect(tap.finish()).toBeNull();
    expect(tap.usage?.promptTokens).toBe(11);
  });

  it('understands CRLF line endings and multi-line data', () => {
    const crlf = stream.replaceAll('\n', '\r\n');
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: true });
    const out = run(tap, [Buffer.from(crlf)]);
    expect(out.toString()).toBe(crlf.replace(usageChunk.replaceAll('\n', '\r\n'), '').replaceAll(',"usage":null', ''));
    expect(tap.completionText()).toBe(words.join(''));
  });

  it('passes garbage through untouched and keeps reading after it', () => {
    const garbage = ': comment\n\nnot a field\n\ndata: {broken json\n\n';
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: true });
    const out = run(tap, [Buffer.from(role + garbage + chunk('ok') + usageChunk + done)]);
    expect(out.toString()).toBe(unasked(role + garbage + chunk('ok') + done));
    expect(tap.completionText()).toBe('ok');
    expect(tap.usage?.completionTokens).toBe(7);
  });

  it('knows a stream that stopped before [DONE] did not finish, and what it streamed', () => {
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: true });
    run(tap, [Buffer.from(role + chunk('partial') + chunk(' answer'))]);
    expect(tap.finished).toBe(false);
    expect(tap.usage).toBeUndefined();
    expect(tap.completionText()).toBe('partial answer');
  });

  it('collects tool-call arguments and legacy completion text', () => {
    const tool = 'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"get_weather","arguments":"{\\"city\\":"}}]}}]}\n\n';
    const chat = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false });
    chat.push(Buffer.from(tool));
    expect(chat.completionText()).toBe('get_weather{"city":');
    const legacy = new SseTap({ dialect: DIALECTS.completions, stripUsageChunk: false });
    legacy.push(Buffer.from('data: {"choices":[{"text":"Once","index":0}]}\n\n'));
    expect(legacy.completionText()).toBe('Once');
  });

  it('reads usage from the Responses API completion event', () => {
    const tap = new SseTap({ dialect: DIALECTS.responses, stripUsageChunk: true });
    const events =
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}\n\n' +
      'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0}}}}\n\n';
    const out = run(tap, [Buffer.from(events)]);
    expect(out.toString()).toBe(events);
    expect(tap.usage).toEqual({ promptTokens: 5, cachedTokens: 0, completionTokens: 1, reasoningTokens: 0 });
    expect(tap.finished).toBe(true);
  });

  it('notes the ids of the Responses output items, as they stream and in the final output, each once', () => {
    const tap = new SseTap({ dialect: DIALECTS.responses, stripUsageChunk: false });
    const events =
      'event: response.output_item.added\ndata: {"type":"response.output_item.added","item":{"id":"rs_1","type":"reasoning"}}\n\n' +
      'event: response.output_item.done\ndata: {"type":"response.output_item.done","item":{"id":"rs_1","type":"reasoning"}}\n\n' +
      'event: response.output_item.added\ndata: {"type":"response.output_item.added","item":{"id":"msg_2","type":"message"}}\n\n';
    run(tap, [Buffer.from(events)]);
    expect(tap.outputItemIds).toEqual(['rs_1', 'msg_2']);
    tap.push(
      Buffer.from('event: response.completed\ndata: {"type":"response.completed","response":{"output":[{"id":"rs_1"},{"id":"msg_2"},{"id":"fc_3"}]}}\n\n'),
    );
    expect(tap.outputItemIds).toEqual(['rs_1', 'msg_2', 'fc_3']);
  });

  it('notes the time of the first token, not of the role chunk', () => {
    let clock = 100;
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false, now: () => clock });
    tap.push(Buffer.from(role));
    clock = 250;
    tap.push(Buffer.from(chunk('first')));
    clock = 400;
    tap.push(Buffer.from(chunk('second')));
    expect(tap.firstTokenTime).toBe(250);
  });

  it('records an error event sent inside the stream', () => {
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false });
    tap.push(Buffer.from('data: {"error":{"message":"boom","type":"server_error","code":"server_error"}}\n\n'));
    expect(tap.error).toEqual({ message: 'boom', code: 'server_error' });
  });
});

describe('SseTap with an allowance (a budget’s cut)', () => {
  const count = (text: string) => text.split(' ').filter((w) => w !== '').length; // one token per word, for the test
  const wordChunk = (index: number, word: string) =>
    `data: {"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":${index},"delta":{"content":" ${word}"},"finish_reason":null}]}\n\n`;

  it('says when the streamed completion reaches the allowance, and not before', () => {
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false, allowance: { tokens: 5, count } });
    const reached: boolean[] = [];
    for (let i = 0; i < 7; i++) {
      tap.push(Buffer.from(wordChunk(0, `w${i}`)));
      reached.push(tap.overAllowance);
    }
    expect(reached).toEqual([false, false, false, false, true, true, true]);
    expect(tap.streamedTokens()).toBe(7);
  });

  it('relays nothing past the event that reached the allowance, however the bytes arrive', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(fc.nat(2000), { maxLength: 6 }), (strip, cuts) => {
        const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: strip, allowance: { tokens: 5, count } });
        const bytes = Buffer.from(Array.from({ length: 9 }, (_, i) => wordChunk(0, `w${i}`)).join(''));
        const out: Uint8Array[] = [];
        for (const part of splitAt(bytes, cuts)) {
          const forward = tap.push(part);
          if (forward) out.push(forward);
          if (tap.overAllowance) break;
        }
        expect(tap.overAllowance).toBe(true);
        expect(Buffer.concat(out).toString()).toBe(Array.from({ length: 5 }, (_, i) => wordChunk(0, `w${i}`)).join(''));
        expect(tap.streamedTokens()).toBe(5);
      }),
    );
  });

  it('ends a cut chat stream as its output limit would: every open choice with length, the usage asked for, [DONE]', () => {
    const tap = new SseTap({ dialect: DIALECTS.chat, stripUsageChunk: false, allowance: { tokens: 3, count } });
    tap.push(Buffer.from(wordChunk(0, 'a') + wordChunk(1, 'b') + wordChunk(0, 'c')));
    expect(tap.overAllowance).toBe(true);
    const events = Buffer.from(tap.cutEnding(11, true))
      .toString()
      .split('\n\n')
      .filter((e) => e !== '')
      .map((e) => e.slice('data: '.length));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, unknown>);
    expect(chunks.slice(0, 2).map((c) => c.choices)).toEqual([
      [{ index: 0, delta: {}, logprobs: null, finish_reason: 'length' }],
      [{ index: 1, delta: {}, logprobs: null, finish_reason: 'length' }],
    ]);
    expect(chunks[0]).toMatchObject({ id: 'c1', object: 'chat.completion.chunk', created: 7, model: 'm' });
    expect(chunks[2]).toMatchObject({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } });
  });

  it('ends a cut Responses stream with response.incomplete (max_output_tokens)', () => {
    const tap = new SseTap({ dialect: DIALECTS.responses, stripUsageChunk: false, allowance: { tokens: 2, count } });
    const event = (type: string, payload: Record<string, unknown>, seq: number) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq, ...payload })}\n\n`;
    tap.push(Buffer.from(event('response.created', { response: { id: 'resp_1', object: 'response', status: 'in_progress', output: [] } }, 0)));
    tap.push(Buffer.from(event('response.output_text.delta', { delta: 'one two' }, 1)));
    expect(tap.overAllowance).toBe(true);
    const text = Buffer.from(tap.cutEnding(5, false)).toString();
    expect(text.startsWith('event: response.incomplete\n')).toBe(true);
    const data = JSON.parse(text.split('\n')[1]!.slice('data: '.length)) as Record<string, unknown>;
    expect(data).toMatchObject({
      type: 'response.incomplete',
      sequence_number: 2,
      response: { id: 'resp_1', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { input_tokens: 5, output_tokens: 2 } },
    });
  });

  it('counts only near the allowance: a long stream far below it is never tokenized on the way', () => {
    let calls = 0;
    const tap = new SseTap({
      dialect: DIALECTS.chat,
      stripUsageChunk: false,
      allowance: {
        tokens: 1_000_000,
        count: (text) => {
          calls++;
          return count(text);
        },
      },
    });
    for (let i = 0; i < 1000; i++) tap.push(Buffer.from(wordChunk(0, 'word')));
    expect(calls).toBe(0);
    expect(tap.overAllowance).toBe(false);
  });
});
