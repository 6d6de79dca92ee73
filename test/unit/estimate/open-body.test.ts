/**
 * Reading a client's body (src/estimate/index.ts, openBody): a large body is
 * parsed, checked and estimated on the worker from its raw bytes, a small one
 * inline — with the same facts, fields, layout, estimate and the same 400s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Endpoint } from '../../../src/endpoints.js';
import { BodyBuffer, ownsItsBuffer } from '../../../src/http/body.js';
import { builtinPriceTable, closeEstimator, configureEstimator, getEstimatorStats, openBody, warmEstimator } from '../../../src/estimate/index.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1_000 };

/** How openBody answers for these bytes: what it read and estimated, or its refusal. */
async function outcome(endpoint: Endpoint, text: string | Buffer, model?: string): Promise<unknown> {
  try {
    const opened = await openBody(endpoint, Buffer.from(text));
    try {
      const { facts, fields, layout, bytes } = opened;
      return { facts, fields, layout, bytes: bytes.toString('latin1'), estimate: await opened.estimate(options, model) };
    } finally {
      opened.close();
    }
  } catch (error) {
    const { name, message, code, param } = error as { name: string; message: string; code: string; param: string | null };
    return { refused: { name, message, code, param } };
  }
}

/** The same bytes read inline and on the worker. */
async function bothWays(endpoint: Endpoint, text: string | Buffer, model?: string): Promise<{ inline: unknown; worker: unknown }> {
  configureEstimator({ offloadThresholdBytes: Number.MAX_SAFE_INTEGER });
  const inline = await outcome(endpoint, text, model);
  configureEstimator({ offloadThresholdBytes: 0 });
  const before = getEstimatorStats().bodiesOffloaded;
  const worker = await outcome(endpoint, text, model);
  expect(getEstimatorStats().bodiesOffloaded).toBe(before + 1);
  return { inline, worker };
}

const chat = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'What is a fox?' }], max_tokens: 50, ...extra });

describe('a body read on the worker', () => {
  beforeAll(async () => {
    configureEstimator({ workerThreads: 1 });
    await warmEstimator({ startWorkers: true });
  }, 60_000);
  afterAll(async () => {
    configureEstimator({ offloadThresholdBytes: 64 * 1024 });
    await closeEstimator();
  });

  it.each<[string, Endpoint, string | Buffer]>([
    ['a chat request', 'chat', chat({ user: 'u-1', metadata: { tags: 'a,b' }, stream: true, stream_options: { include_usage: false } })],
    ['a Responses request', 'responses', JSON.stringify({ model: 'o4-mini', input: 'hi', store: false, background: true, previous_response_id: 'resp_1' })],
    ['a Messages request', 'messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })],
    ['an embeddings request', 'embeddings', JSON.stringify({ model: 'text-embedding-3-small', input: ['a', 'b'] })],
    ['ten thousand tiny messages', 'chat', chat({ messages: Array.from({ length: 10_000 }, (_, i) => ({ role: 'user', content: `m${i}` })) })],
    ['a byte order mark and spacing', 'chat', `\ufeff  ${chat()}  `],
  ])(
    'reads and estimates %s exactly as inline',
    async (_what, endpoint, text) => {
      const { inline, worker } = await bothWays(endpoint, text);
      expect(inline).not.toHaveProperty('refused');
      expect(worker).toEqual(inline);
    },
    60_000,
  );

  it('estimates a downgraded request as its new model on both paths', async () => {
    const { inline, worker } = await bothWays('chat', chat(), 'gpt-4o-mini');
    expect((inline as { estimate: { model: string } }).estimate.model).toBe('gpt-4o-mini');
    expect(worker).toEqual(inline);
  }, 60_000);

  it.each<[string, Endpoint, string | Buffer, string, string | null]>([
    ['not JSON', 'chat', '{"model":"gpt-4o",', 'invalid_json', null],
    ['not an object', 'chat', '[1,2]', 'invalid_json', null],
    ['empty', 'chat', '', 'invalid_json', null],
    ['not UTF-8', 'chat', Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), 'invalid_json', null],
    ['a duplicate key', 'chat', '{"model":"gpt-4o","messages":[{"role":"user","content":"a","content":"b"}]}', 'duplicate_key', 'messages[0].content'],
    ['a model spelled twice', 'chat', '{"model":"gpt-4o-mini","messages":[],"m\\u006fdel":"o3"}', 'duplicate_key', 'model'],
    ['no model', 'chat', '{"messages":[]}', 'invalid_request', 'model'],
    ['a model of the wrong type', 'chat', '{"model":7,"messages":[]}', 'invalid_type', 'model'],
    ['a streamed embedding', 'embeddings', '{"model":"text-embedding-3-small","input":"a","stream":true}', 'invalid_value', 'stream'],
    ['metadata too large to carry', 'chat', chat({ metadata: { note: 'x'.repeat(20_000) } }), 'invalid_value', 'metadata'],
    ['a message of the wrong type', 'chat', chat({ messages: [{ role: 'user', content: 42 }] }), 'invalid_type', 'messages[0].content'],
  ])(
    'refuses %s with the same 400 as inline',
    async (_what, endpoint, text, code, param) => {
      const { inline, worker } = await bothWays(endpoint, text);
      expect(inline).toMatchObject({ refused: { code, param } });
      expect(worker).toEqual(inline);
    },
    60_000,
  );

  it('gives the bytes back unchanged, and leaves the event loop free while it parses', async () => {
    configureEstimator({ offloadThresholdBytes: 64 * 1024 });
    const text = chat({ messages: Array.from({ length: 300_000 }, (_, i) => ({ role: 'user', content: `m${i % 10}` })) });
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 1);
    const opened = await openBody('chat', Buffer.from(text));
    clearInterval(ticker);
    opened.close();
    expect(opened.offloaded).toBe(true);
    expect(opened.bytes.toString()).toBe(text);
    // The loop kept turning while the worker parsed 9 MB (timing itself is measured in bench/body-flood.ts).
    expect(ticks).toBeGreaterThan(1);
  }, 60_000);

  it('copies a body that shares its memory with other bytes (a socket read) instead of taking that memory from them', async () => {
    configureEstimator({ offloadThresholdBytes: 0 });
    const text = chat({ messages: Array.from({ length: 2_000 }, (_, i) => ({ role: 'user', content: `m${i}` })) });
    // The body first, then the next request's bytes, in one read (a pipelined connection).
    const read = Buffer.from(`${text}POST /v1/chat/completions HTTP/1.1\r\n`);
    const body = read.subarray(0, Buffer.byteLength(text));
    const opened = await openBody('chat', body);
    opened.close();
    expect(opened.offloaded).toBe(true);
    expect(opened.bytes.toString()).toBe(text);
    expect(read.subarray(Buffer.byteLength(text)).toString()).toBe('POST /v1/chat/completions HTTP/1.1\r\n');
    configureEstimator({ offloadThresholdBytes: 64 * 1024 });
  }, 60_000);
});

describe('a body gathered from its chunks', () => {
  it('is the one chunk itself when it came in one, and the chunks in order in a buffer of its own when it came in several', () => {
    const one = new BodyBuffer(5, 1_000);
    const chunk = Buffer.from('{"a":1}');
    one.push(chunk);
    expect(one.finish()).toBe(chunk);

    const large = 'x'.repeat(100_000);
    const several = new BodyBuffer(undefined, 1_000_000);
    for (let at = 0; at < large.length; at += 30_000) several.push(Buffer.from(large.slice(at, at + 30_000)));
    const gathered = several.finish();
    expect(gathered.toString()).toBe(large);
    expect(ownsItsBuffer(gathered)).toBe(true);
    expect(ownsItsBuffer(chunk)).toBe(false);
  });
});
