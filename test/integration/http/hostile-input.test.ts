/**
 * Hostile and broken input against the real server: every answer is a clear
 * 4xx in OpenAI's shape, and the process stays up and keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { rawRequest } from '../../support/raw-http.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;
let port: number;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_MAX_BODY: '1mb', TOLLGATE_REQUEST_TIMEOUT: '1s' });
  port = proxy.server.port;
});
afterAll(async () => {
  await proxy.close();
});

async function post(
  body: string,
  path = '/chat/completions',
): Promise<{ status: number; error: { code: string; param: string | null; type: string; message: string } | undefined }> {
  const res = await fetch(`${proxy.baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json' },
    body,
  });
  const json = (await res.json()) as { error?: { code: string; param: string | null; type: string; message: string } };
  return { status: res.status, error: json.error };
}

async function stillServing(): Promise<void> {
  const res = await fetch(`${proxy.server.url}/healthz`);
  expect(res.status).toBe(200);
}

describe('wrong types in every field the proxy reads', () => {
  const cases: Array<[string, unknown, string]> = [
    ['model', { model: 7, messages: [] }, 'model'],
    ['stream', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 'stream'],
    ['stream_options', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: 'on' }, 'stream_options'],
    ['messages', { model: 'gpt-4o', messages: 'hello' }, 'messages'],
    ['a message', { model: 'gpt-4o', messages: ['hello'] }, 'messages[0]'],
    ['role', { model: 'gpt-4o', messages: [{ role: 42, content: 'x' }] }, 'messages[0].role'],
    ['content', { model: 'gpt-4o', messages: [{ role: 'user', content: { text: 'x' } }] }, 'messages[0].content'],
    ['a content part', { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] }, 'messages[0].content[0].text'],
    ['image_url', { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: 5 }] }] }, 'messages[0].content[0].image_url'],
    ['name', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x', name: ['a'] }] }, 'messages[0].name'],
    ['tools', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], tools: {} }, 'tools'],
    ['a tool', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: 'f' }] }, 'tools[0].function'],
    ['max_tokens', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], max_tokens: 'lots' }, 'max_tokens'],
    ['max_tokens < 1', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }, 'max_tokens'],
    ['n', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], n: 2.5 }, 'n'],
  ];
  it.each(cases)('%s → 400 naming the field', async (_what, body, param) => {
    const { status, error } = await post(JSON.stringify(body));
    expect(status).toBe(400);
    expect(error?.type).toBe('invalid_request_error');
    expect(error?.param).toBe(param);
  });

  it('embeddings input, completions prompt and responses input too', async () => {
    expect((await post(JSON.stringify({ model: 'text-embedding-3-small', input: { a: 1 } }), '/embeddings')).error?.param).toBe('input');
    expect((await post(JSON.stringify({ model: 'gpt-3.5-turbo-instruct', prompt: 12 }), '/completions')).error?.param).toBe('prompt');
    expect((await post(JSON.stringify({ model: 'gpt-4o', input: 12 }), '/responses')).error?.param).toBe('input');
  });
});

describe('bodies that try to hurt', () => {
  it('refuses a 50 MB chunked upload at the limit while it arrives, and closes that connection', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${proxy.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = Buffer.from(`100000\r\n${'a'.repeat(0x100000)}\r\n`);
    const parts: Array<string | Buffer> = [head, ...Array.from({ length: 50 }, () => chunk)];
    const started = Date.now();
    const res = await rawRequest(port, parts, 10_000);
    expect(res.status).toBe(413);
    expect(res.text).toContain('"code":"body_too_large"');
    expect(res.closedByServer).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
    await stillServing();
  });

  it('answers nesting 100,000 levels deep with a 400, not a stack overflow', async () => {
    const deep = `{"model":"gpt-4o","messages":[{"role":"user","content":${'['.repeat(100_000)}${']'.repeat(100_000)}}]}`;
    const { status, error } = await post(deep);
    expect(status).toBe(400);
    expect(['invalid_json', 'invalid_type', 'invalid_value']).toContain(error?.code);
    await stillServing();
  });

  it('estimates thousands of messages and forwards them', async () => {
    const messages = Array.from({ length: 5000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message number ${i}` }));
    const { status } = await post(JSON.stringify({ model: 'gpt-4o-mini', messages }));
    expect(status).toBe(200);
  });

  it('refuses a body with a duplicate key, naming its path, and logs the refusal', async () => {
    const { status, error } = await post('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"max_tokens":50000}');
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'duplicate_key', param: 'max_tokens', type: 'invalid_request_error' });
    await waitFor(() => proxy.logs.lines.some((line) => line.code === 'duplicate_key'), 'the refusal in the request log');
  });

  it('refuses invalid UTF-8', async () => {
    const res = await fetch(`${proxy.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${proxy.key}` },
      body: Buffer.concat([Buffer.from('{"model":"gpt-4o","messages":[{"role":"user","content":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });
});

describe('misbehaving clients', () => {
  it('answers a header flood with 431 and keeps serving', async () => {
    const flood = Array.from({ length: 3000 }, (_, i) => `X-Flood-${i}: ${'v'.repeat(20)}\r\n`).join('');
    const res = await rawRequest(port, [`GET /healthz HTTP/1.1\r\nHost: x\r\n${flood}\r\n`]);
    expect(res.status).toBe(431);
    await stillServing();
  });

  it('cuts off a client that never finishes sending its body', async () => {
    const started = Date.now();
    const res = await rawRequest(
      port,
      [
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${proxy.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`,
        { pauseMs: 10_000 },
      ],
      8000,
    );
    expect(res.closedByServer).toBe(true);
    expect(Date.now() - started).toBeLessThan(4000);
    expect([408, undefined]).toContain(res.status);
    await stillServing();
  });

  it('cuts off a client that never finishes sending its headers', async () => {
    const res = await rawRequest(port, ['GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ', { pauseMs: 10_000 }], 8000);
    expect(res.closedByServer).toBe(true);
    await stillServing();
  });
});
