/**
 * Upstream mistakes reported to the right person (docs/errors.md, "Errors from the upstream";
 * docs/upstreams.md, "The start-up check"): a provider key the provider rejects, and a base URL
 * without /v1, are logged loudly at start and shown by /readyz (503), and a tenant who meets them
 * is told the operator has to act — in the route's own error shape, with
 * `x-tollgate-upstream-error` — never the provider's words. Other upstream errors keep their
 * body and only gain the header.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import type { FakeUpstream } from '../../../src/demo/fake-upstream/index.js';
import { startFakeUpstream } from '../../support/fake-upstream.js';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

const WRONG_KEY = 'sk-proj-wrongwrongwrong0123456789';
const WRONG_ANTHROPIC_KEY = 'sk-ant-wrongwrongwrong0123456789';
const ERROR_LEVEL = 'error';

interface OpenAIError {
  error: { message: string; type: string; param: unknown; code: string };
}
interface AnthropicError {
  type: string;
  error: { type: string; message: string };
  request_id: string;
}
interface Readiness {
  status: string;
  upstreams: Array<{ name: string; state: string; status: number | null; message?: string; checked_at: string | null }>;
}

function post(proxy: TestProxy, path: string, body: Record<string, unknown>, scenario = ''): Promise<Response> {
  return fetch(`${proxy.anthropicBaseURL}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${proxy.key}`,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      ...(scenario === '' ? {} : { 'x-fake-scenario': scenario }),
    },
    body: JSON.stringify(body),
  });
}

const chatBody = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const embeddingsBody = { model: 'text-embedding-3-small', input: 'hi' };
const messagesBody = { model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };

async function rowOf(proxy: TestProxy, requestId: string): Promise<Record<string, unknown>> {
  const database = openDatabase(proxy.dbPath);
  try {
    let row: Record<string, unknown> | undefined;
    await waitFor(() => {
      row = database.sqlite.prepare('SELECT * FROM ledger WHERE request_id = ?').get(requestId) as Record<string, unknown> | undefined;
      return row !== undefined && row.status !== 'pending';
    }, `ledger row ${requestId}`);
    return row!;
  } finally {
    database.close();
  }
}

function logged(proxy: TestProxy, text: string): Array<Record<string, unknown>> {
  return proxy.logs.lines.filter((line) => typeof line.msg === 'string' && line.msg.includes(text));
}

async function readiness(proxy: TestProxy): Promise<{ status: number; body: Readiness }> {
  const res = await fetch(`${proxy.anthropicBaseURL}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
}

describe('a provider key the provider rejects', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy({ TOLLGATE_UPSTREAM_KEY: WRONG_KEY, TOLLGATE_ANTHROPIC_KEY: WRONG_ANTHROPIC_KEY });
    await waitFor(() => logged(proxy, 'UPSTREAM KEY REJECTED').length === 2, 'the start-up check');
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('is logged at start as an error that names the upstream and the setting, never the key', () => {
    const [openai, anthropic] = ['default', 'anthropic'].map((name) => logged(proxy, 'UPSTREAM KEY REJECTED').find((line) => line.upstream === name)!);
    expect(openai).toMatchObject({ level: ERROR_LEVEL, status: 401, state: 'key_rejected' });
    expect(openai!.msg).toContain('the provider rejected TOLLGATE_UPSTREAM_KEY for default');
    expect(anthropic).toMatchObject({ level: ERROR_LEVEL, status: 401 });
    expect(anthropic!.msg).toContain('TOLLGATE_ANTHROPIC_KEY');
    const all = proxy.logs.raw.join('\n');
    expect(all).not.toContain(WRONG_KEY);
    expect(all).not.toContain(WRONG_ANTHROPIC_KEY);
    // Tollgate's checks are not requests it served.
    expect(proxy.fake.requests).toEqual([]);
    expect(proxy.fake.probes.map((probe) => probe.path)).toEqual(['/v1/models', '/v1/models']);
  });

  it('tells an OpenAI client the provider refused Tollgate’s key, in OpenAI’s shape, and settles at zero cost', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', chatBody],
      ['/v1/embeddings', embeddingsBody],
      ['/v1/chat/completions', { ...chatBody, stream: true }],
    ] as const) {
      const res = await post(proxy, path, body);
      expect(res.status).toBe(401);
      expect(res.headers.get('x-tollgate-upstream-error')).toBe('401');
      expect(res.headers.get('x-tollgate-error-code')).toBe('upstream_auth_failed');
      const text = await res.text();
      const error = (JSON.parse(text) as OpenAIError).error;
      expect(error).toMatchObject({ type: 'upstream_error', code: 'upstream_auth_failed', param: null });
      expect(error.message).toContain("refused Tollgate's provider key");
      expect(error.message).toContain('your Tollgate key is fine');
      expect(text).not.toContain('Incorrect API key');
      expect(text).not.toContain('invalid_api_key');
      const row = await rowOf(proxy, res.headers.get('x-request-id')!);
      expect(row).toMatchObject({ status: 'upstream_error', http_status: 401, cost_micros: 0 });
    }
  });

  it('tells an Anthropic client the same in Anthropic’s shape', async () => {
    const res = await post(proxy, '/v1/messages', messagesBody);
    expect(res.status).toBe(401);
    expect(res.headers.get('x-tollgate-upstream-error')).toBe('401');
    expect(res.headers.get('x-tollgate-error-code')).toBe('upstream_auth_failed');
    const body = (await res.json()) as AnthropicError;
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('authentication_error');
    expect(body.error.message).toContain('your Tollgate key is fine');
    expect(body.error.message).not.toContain('x-api-key');
    expect(body.request_id).toBe(res.headers.get('x-request-id'));
    const row = await rowOf(proxy, res.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'upstream_error', http_status: 401, cost_micros: 0 });
  });

  it('makes /readyz answer 503 with each upstream’s state', async () => {
    const { status, body } = await readiness(proxy);
    expect(status).toBe(503);
    expect(body.status).toBe('upstream_misconfigured');
    expect(body.upstreams.map((u) => [u.name, u.state, u.status])).toEqual([
      ['default', 'key_rejected', 401],
      ['anthropic', 'key_rejected', 401],
    ]);
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
  });
});

describe('an upstream URL without /v1', () => {
  let own: FakeUpstream;
  let proxy: TestProxy;
  beforeAll(async () => {
    own = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
    proxy = await startTestProxy({ TOLLGATE_UPSTREAM_URL: `http://127.0.0.1:${own.port}` });
    await waitFor(() => logged(proxy, 'UPSTREAM PATH NOT FOUND').length === 1, 'the start-up check');
  });
  afterAll(async () => {
    await proxy.close();
    await own.close();
  });

  it('is logged at start as a base URL probably missing /v1', () => {
    const [line] = logged(proxy, 'UPSTREAM PATH NOT FOUND');
    expect(line).toMatchObject({ level: ERROR_LEVEL, upstream: 'default', status: 404, state: 'path_not_found' });
    expect(line!.msg).toContain('/models not found: is the base URL missing /v1?');
    expect(logged(proxy, 'upstream anthropic answered /models')).toHaveLength(1);
  });

  it('gives the client a marked 404 that says the upstream does not serve the path', async () => {
    const res = await post(proxy, '/v1/chat/completions', chatBody);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-tollgate-upstream-error')).toBe('404');
    const error = ((await res.json()) as OpenAIError).error;
    expect(error.code).toBe('upstream_path_not_found');
    expect(error.message).toContain('does not serve this path');
    expect(error.message).toContain('/v1');
    const row = await rowOf(proxy, res.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'upstream_error', http_status: 404, cost_micros: 0, error_code: 'unknown_url' });
  });

  it('makes /readyz answer 503 naming the path', async () => {
    const { status, body } = await readiness(proxy);
    expect(status).toBe(503);
    expect(body.upstreams.find((u) => u.name === 'default')).toMatchObject({ state: 'path_not_found', status: 404 });
    expect(body.upstreams.find((u) => u.name === 'default')!.message).toContain('missing /v1');
    expect(body.upstreams.find((u) => u.name === 'anthropic')).toMatchObject({ state: 'ok', status: 200 });
  });
});

describe('other upstream errors', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy();
    await waitFor(() => logged(proxy, 'answered /models').length === 2, 'the start-up check');
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('the start-up check logs each upstream at info and /readyz is 200', async () => {
    for (const line of logged(proxy, 'answered /models')) expect(line.level).toBe('info');
    const { status, body } = await readiness(proxy);
    expect(status).toBe(200);
    expect(body.status).toBe('ready');
    expect(body.upstreams.map((u) => u.state)).toEqual(['ok', 'ok']);
  });

  it('keep their body on the OpenAI routes and carry the header', async () => {
    const limited = await post(proxy, '/v1/chat/completions', chatBody, 'status=429');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-tollgate-upstream-error')).toBe('429');
    expect(limited.headers.get('retry-after')).toBe('1');
    const limitedError = ((await limited.json()) as OpenAIError).error;
    expect(limitedError.code).toBe('rate_limit_exceeded');
    expect(limitedError.message).toContain('Rate limit reached for requests in organization org-***');

    const rejected = await post(proxy, '/v1/embeddings', embeddingsBody, 'status=400');
    expect(rejected.status).toBe(400);
    expect(rejected.headers.get('x-tollgate-upstream-error')).toBe('400');
    expect(rejected.headers.get('x-tollgate-error-code')).toBeNull();
    expect(((await rejected.json()) as OpenAIError).error).toMatchObject({
      code: 'invalid_value',
      message: 'The fake upstream was told to reject this request.',
    });

    const missing = await post(proxy, '/v1/chat/completions', chatBody, 'status=404');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-tollgate-upstream-error')).toBe('404');
    expect(((await missing.json()) as OpenAIError).error.code).toBe('model_not_found');
  });

  it('keep their body on /v1/messages and carry the header', async () => {
    const limited = await post(proxy, '/v1/messages', messagesBody, 'status=429');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-tollgate-upstream-error')).toBe('429');
    expect(((await limited.json()) as AnthropicError).error.type).toBe('rate_limit_error');

    const rejected = await post(proxy, '/v1/messages', messagesBody, 'status=400');
    expect(rejected.status).toBe(400);
    expect(rejected.headers.get('x-tollgate-upstream-error')).toBe('400');
    expect(((await rejected.json()) as AnthropicError).error).toMatchObject({
      type: 'invalid_request_error',
      message: 'The fake upstream was told to reject this request.',
    });
  });

  it('a successful answer carries no upstream-error header', async () => {
    const res = await post(proxy, '/v1/chat/completions', chatBody);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-tollgate-upstream-error')).toBeNull();
  });
});
