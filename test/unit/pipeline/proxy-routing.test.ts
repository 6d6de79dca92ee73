/**
 * Routing and the errors the proxy makes itself, in-process through
 * `app.request` (no listening socket for Tollgate; the fake upstream is real).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFUSED_PORT } from '../../support/refused.js';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';

const KEY = 'sk-routing-upstream-key';
let fake: FakeUpstream;
let upstream: Upstream;
const logs = captureLogs('debug');
const built: TestApp[] = [];
let tenantKey: string;

/** An app on its own temp database, with one key whose secret is `tenantKey`. */
function appWith(options: { upstream?: Upstream; maxBodyBytes?: number } = {}) {
  const test = buildTestApp({ upstream: options.upstream ?? upstream, logger: logs.logger, maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024 });
  built.push(test);
  tenantKey = test.issueKey('routing');
  return test.app;
}

function upstreamAt(url: string, overrides: Partial<Parameters<typeof createUpstream>[0]> = {}): Upstream {
  return createUpstream({ url, apiKey: KEY, connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 4, ...overrides });
}

const chatBody = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

function post(path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}): Request {
  return new Request(`http://tollgate.test${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tenantKey}`, ...headers },
  });
}

function get(path: string): Request {
  return new Request(`http://tollgate.test${path}`, { headers: { authorization: `Bearer ${tenantKey}` } });
}

async function errorOf(res: Response) {
  const body = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
  return body.error;
}

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: KEY });
  upstream = upstreamAt(fake.url);
});
afterAll(async () => {
  for (const test of built) test.close();
  await upstream.close();
  await fake.close();
});

describe('routes', () => {
  it('forwards a chat completion and returns the upstream answer with a Tollgate request id', async () => {
    const res = await send(appWith(), () => post('/v1/chat/completions', JSON.stringify(chatBody)));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number } };
    expect(body.choices[0]?.message.content).toMatch(/^The quick brown fox/);
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    expect(res.headers.get('x-upstream-request-id')).toBe(fake.requests.at(-1)?.id);
  });

  it('sends the proxy key upstream and never the client credentials or organization', async () => {
    const res = await appWith().request(
      post('/v1/chat/completions', JSON.stringify(chatBody), {
        'x-api-key': 'tg-client-secret',
        'api-key': 'tg-client-secret',
        'openai-organization': 'org-tenant',
        'openai-beta': 'assistants=v2',
      }),
    );
    expect(res.status).toBe(200);
    const seen = fake.requests.at(-1)!.headers;
    expect(seen.authorization).toBe(`Bearer ${KEY}`);
    expect(seen['x-api-key']).toBeUndefined();
    expect(seen['api-key']).toBeUndefined();
    expect(seen['openai-organization']).toBeUndefined();
    expect(seen['openai-beta']).toBe('assistants=v2');
    // and the upstream's organization and account rate-limit headers do not reach the client
    expect(res.headers.get('openai-organization')).toBeNull();
    expect(res.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(res.headers.get('openai-version')).toBe('2020-10-01');
  });

  it('lists and retrieves models', async () => {
    const app = appWith();
    const list = await app.request(get('/v1/models'));
    expect(list.status).toBe(200);
    expect(((await list.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toContain('gpt-4o');
    const one = await app.request(get('/v1/models/gpt-4o'));
    expect(((await one.json()) as { id: string }).id).toBe('gpt-4o');
  });

  it('answers health and readiness', async () => {
    const test = buildTestApp({ upstream, logger: logs.logger });
    built.push(test);
    const { app, lifecycle } = test;
    expect((await app.request('http://tollgate.test/healthz')).status).toBe(200);
    expect((await app.request('http://tollgate.test/readyz')).status).toBe(200);
    lifecycle.shuttingDown = true;
    const draining = await app.request('http://tollgate.test/readyz');
    expect(draining.status).toBe(503);
    expect(draining.headers.get('connection')).toBe('close');
  });
});

describe('errors the proxy makes', () => {
  it('answers an unknown route with 404 unknown_url in OpenAI shape', async () => {
    const res = await send(appWith(), () => post('/v1/not-a-thing', '{}'));
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    expect(await errorOf(res)).toEqual({ message: 'Invalid URL (POST /v1/not-a-thing).', type: 'invalid_request_error', param: null, code: 'unknown_url' });
  });

  it('answers a known route with the wrong method with 405', async () => {
    const res = await appWith().request(get('/v1/chat/completions'));
    expect(res.status).toBe(405);
    expect((await errorOf(res)).code).toBe('method_not_allowed');
  });

  it.each([
    ['malformed JSON', '{"model": "gpt-4o",', 'invalid_json'],
    ['an empty body', '', 'invalid_json'],
    ['a JSON array', '[1,2]', 'invalid_json'],
    ['a JSON string', '"hello"', 'invalid_json'],
  ])('rejects %s with 400 %s', async (_name, body, code) => {
    const res = await send(appWith(), () => post('/v1/chat/completions', body));
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.code).toBe(code);
    expect(error.type).toBe('invalid_request_error');
  });

  it('rejects a body that is not valid UTF-8', async () => {
    const bytes: Uint8Array<ArrayBuffer> = new Uint8Array([...Buffer.from('{"model":"gpt-4o","x":"'), 0xff, 0xfe, ...Buffer.from('"}')]);
    const res = await send(appWith(), () => post('/v1/chat/completions', bytes));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: 'invalid_json', message: 'The request body is not valid UTF-8.' });
  });

  it.each([
    [{ messages: [] }, 'model', 'invalid_request'],
    [{ model: 42 }, 'model', 'invalid_type'],
    [{ model: 'gpt-4o', stream: 'yes' }, 'stream', 'invalid_type'],
    [{ model: 'gpt-4o', stream: true, stream_options: [] }, 'stream_options', 'invalid_type'],
    [{ model: 'gpt-4o', stream: true, stream_options: { include_usage: 1 } }, 'stream_options.include_usage', 'invalid_type'],
  ])('rejects %j naming the parameter %s', async (body, param, code) => {
    const res = await send(appWith(), () => post('/v1/chat/completions', JSON.stringify(body)));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ param, code });
  });

  it('rejects a body over the limit by its declared length without reading it', async () => {
    const res = await send(appWith({ maxBodyBytes: 100 }), () => post('/v1/chat/completions', JSON.stringify({ ...chatBody, pad: 'x'.repeat(200) })));
    expect(res.status).toBe(413);
    expect((await errorOf(res)).code).toBe('body_too_large');
  });

  it('cuts off a streamed body as soon as it passes the limit', async () => {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1;
        if (sent > 1000) controller.close();
        else controller.enqueue(new Uint8Array(1024).fill(0x20));
      },
    });
    const app = appWith({ maxBodyBytes: 8 * 1024 });
    const req = new Request('http://tollgate.test/v1/chat/completions', {
      method: 'POST',
      body,
      duplex: 'half',
      headers: { authorization: `Bearer ${tenantKey}` },
    } as RequestInit);
    const res = await app.request(req);
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(20); // stopped reading near 8 KB, not after 1 MB
  });

  it('answers 502 upstream_unreachable when nothing listens upstream', async () => {
    const dead = upstreamAt(`http://127.0.0.1:${REFUSED_PORT}/v1`);
    const res = await send(appWith({ upstream: dead }), () => post('/v1/chat/completions', JSON.stringify(chatBody)));
    expect(res.status).toBe(502);
    expect(await errorOf(res)).toMatchObject({ code: 'upstream_unreachable', type: 'upstream_error' });
    await dead.close();
  });

  it('answers 504 upstream_timeout when the upstream sends no headers in time', async () => {
    const slow = upstreamAt(fake.url, { headersTimeoutMs: 200 });
    const res = await send(appWith({ upstream: slow }), () =>
      post('/v1/chat/completions', JSON.stringify(chatBody), { 'x-fake-scenario': 'headersDelay=2000' }),
    );
    expect(res.status).toBe(504);
    expect((await errorOf(res)).code).toBe('upstream_timeout');
    await slow.close();
  });

  it('passes upstream errors through with their status, body and retry headers', async () => {
    const res = await send(appWith(), () => post('/v1/chat/completions', JSON.stringify(chatBody), { 'x-fake-scenario': 'status=429' }));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect((await errorOf(res)).code).toBe('rate_limit_exceeded');
  });

  it('never logs the upstream key or a client key', async () => {
    await send(appWith(), () => post('/v1/chat/completions', JSON.stringify(chatBody), { authorization: 'Bearer tg-never-log-me' }));
    await send(appWith(), () => post('/v1/chat/completions', '{bad', { 'x-api-key': 'tg-never-log-me' }));
    await send(appWith(), () => post('/v1/chat/completions', '{bad'));
    const all = logs.raw.join('\n');
    expect(all).not.toContain('tg-never-log-me');
    expect(all).not.toContain(KEY);
    expect(all).not.toContain(tenantKey);
  });
});

describe('streams', () => {
  it('asks upstream for usage and strips that chunk when the client did not ask for it', async () => {
    const res = await send(appWith(), () => post('/v1/chat/completions', JSON.stringify({ ...chatBody, stream: true })));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    const sent = fake.requests.at(-1)!.body as { stream_options?: { include_usage?: boolean } };
    expect(sent.stream_options?.include_usage).toBe(true);
    // Neither the usage chunk nor the usage:null members the request made the upstream add.
    expect(text).not.toContain('"usage"');
    // [DONE], then only the receipt comment (docs/ledger-and-exports.md, "Receipts").
    expect(text).toMatch(/data: \[DONE\]\n\n: tollgate cost_usd=\d+\.\d{6} reserved_usd=\d+\.\d{6} request_id=req_\S+\n\n$/);
  });

  it('keeps the usage chunk when the client asked for it', async () => {
    const res = await appWith().request(post('/v1/chat/completions', JSON.stringify({ ...chatBody, stream: true, stream_options: { include_usage: true } })));
    const text = await res.text();
    expect(text).toMatch(/"choices":\[\],"usage":\{"prompt_tokens":\d+/);
  });

  it('ends a stream that breaks upstream with an error event the SDK understands', async () => {
    const res = await appWith().request(post('/v1/chat/completions', JSON.stringify({ ...chatBody, stream: true }), { 'x-fake-scenario': 'breakAfter=3' }));
    const text = await res.text();
    expect(text).toContain('"content":" brown"');
    expect(text).toMatch(/data: \{"error":\{"message":"The upstream stream was interrupted before it finished\."/);
  });
});

/** Builds the request after the app exists (the app issues the key the request carries). */
function send(app: ReturnType<typeof appWith>, request: () => Request): Promise<Response> {
  return Promise.resolve(app.request(request()));
}
