/**
 * End to end: the real server on a free port, driven by the real `openai`
 * SDK, compared with the same SDK talking to the fake upstream directly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { type APIError } from 'openai';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;
let viaProxy: OpenAI;
let direct: OpenAI;

const messages = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: 'Tell me about foxes.' },
];

function scenario(value: string) {
  return { headers: { 'x-fake-scenario': value } };
}

beforeAll(async () => {
  proxy = await startTestProxy();
  viaProxy = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
  direct = new OpenAI({ baseURL: proxy.fake.url, apiKey: UPSTREAM_KEY, maxRetries: 0 });
});
afterAll(async () => {
  await proxy.close();
});

describe('the SDK sees the same answers through Tollgate', () => {
  it('chat completion (JSON)', async () => {
    const [a, b] = await Promise.all([
      viaProxy.chat.completions.create({ model: 'gpt-4o-mini', messages }),
      direct.chat.completions.create({ model: 'gpt-4o-mini', messages }),
    ]);
    expect(a.choices).toEqual(b.choices);
    expect(a.usage).toEqual(b.usage);
    expect(a._request_id).toMatch(/^req_/);
  });

  it('chat completion (stream), chunk for chunk', async () => {
    const collect = async (client: OpenAI) => {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
      const deltas: unknown[] = [];
      for await (const chunk of stream) deltas.push(chunk.choices);
      return deltas;
    };
    const [a, b] = await Promise.all([collect(viaProxy), collect(direct)]);
    expect(a).toEqual(b);
    expect(a.length).toBeGreaterThan(3);
  });

  it('chat completion stream with usage requested by the client', async () => {
    const stream = await viaProxy.chat.completions.create({ model: 'gpt-4o', messages, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage?.completion_tokens).toBe(12);
  });

  it('embeddings (the SDK asks for base64 and decodes it)', async () => {
    const input = ['one', 'two', 'three'];
    const [a, b] = await Promise.all([
      viaProxy.embeddings.create({ model: 'text-embedding-3-small', input }),
      direct.embeddings.create({ model: 'text-embedding-3-small', input }),
    ]);
    expect(a.data).toEqual(b.data);
    expect(a.data[0]?.embedding).toHaveLength(8);
    expect(a.usage).toEqual(b.usage);
  });

  it('models', async () => {
    const ids: string[] = [];
    for await (const model of viaProxy.models.list()) ids.push(model.id);
    expect(ids).toContain('gpt-4o-mini');
    expect((await viaProxy.models.retrieve('gpt-4o')).id).toBe('gpt-4o');
  });

  it('legacy completions and the Responses API, JSON and stream', async () => {
    const completion = await viaProxy.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Once upon a time' });
    expect(completion.choices[0]?.text).toMatch(/^The quick/);
    const response = await viaProxy.responses.create({ model: 'gpt-4.1', input: 'Hello' });
    expect(response.output_text).toMatch(/^The quick brown/);
    const stream = await viaProxy.responses.create({ model: 'gpt-4.1', input: 'Hello', stream: true });
    let text = '';
    let completed = false;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = true;
    }
    expect(completed).toBe(true);
    expect(text).toBe(response.output_text);
  });
});

describe('the SDK raises its typed errors', () => {
  it('an upstream 500 is an InternalServerError', async () => {
    const error = await viaProxy.chat.completions.create({ model: 'gpt-4o', messages }, scenario('status=500')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as APIError).status).toBe(500);
  });

  it('an upstream 429 is a RateLimitError carrying the upstream message', async () => {
    const error = await viaProxy.chat.completions.create({ model: 'gpt-4o', messages }, scenario('status=429')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as APIError).code).toBe('rate_limit_exceeded');
  });

  it('a request the proxy rejects is a BadRequestError with the parameter named', async () => {
    const error = await viaProxy.chat.completions.create({ model: 'gpt-4o', messages, stream: 'yes' as unknown as false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as APIError).param).toBe('stream');
    expect((error as APIError).requestID).toMatch(/^req_/);
  });

  it('an unknown route is a NotFoundError', async () => {
    const error = await viaProxy.post('/fine_tuning/nope', { body: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as APIError).code).toBe('unknown_url');
  });

  it('a stream that breaks upstream ends in an APIError after the content that arrived', async () => {
    const stream = await viaProxy.chat.completions.create({ model: 'gpt-4o', messages, stream: true }, scenario('breakAfter=4'));
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    })().catch((e: unknown) => e);
    expect(text).toBe('The quick brown fox');
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as APIError).message).toMatch(/interrupted/);
  });
});

describe('client aborts', () => {
  it('a client that aborts mid-stream leaves Tollgate reading the upstream on to its usage', async () => {
    const before = proxy.fake.requests.length;
    const stream = await viaProxy.chat.completions.create({ model: 'gpt-4o', messages, stream: true }, scenario('delay=20,words=40'));
    let chunks = 0;
    for await (const _chunk of stream) {
      chunks += 1;
      if (chunks === 3) stream.controller.abort();
    }
    const record = proxy.fake.requests[before]!;
    // The upstream bills what it generates; only the usage at its end says how much.
    await waitFor(() => record.finished, 'the upstream to send its whole answer');
    expect(record.closedEarly).toBe(false);
    expect(record.chunksSent).toBe(40);
  });
});
