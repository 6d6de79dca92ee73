/** Authentication on every route: the three headers, every way a key can be refused (a suspended one too), and model allowlists. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';

const UPSTREAM_KEY = 'sk-auth-upstream';
let fake: FakeUpstream;
let upstream: Upstream;
let test: TestApp;
const logs = captureLogs('info');

const ROUTES: Array<[string, string, unknown]> = [
  ['POST', '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }],
  ['POST', '/v1/completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'hi' }],
  ['POST', '/v1/embeddings', { model: 'text-embedding-3-small', input: 'hi' }],
  ['POST', '/v1/responses', { model: 'gpt-4o-mini', input: 'hi' }],
  ['GET', '/v1/models', undefined],
  ['GET', '/v1/models/gpt-4o', undefined],
];

function call(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return Promise.resolve(
    test.app.request(
      new Request(`http://tollgate.test${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    ),
  );
}

async function code(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  upstream = createUpstream({ url: fake.url, apiKey: UPSTREAM_KEY, connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 4 });
  test = buildTestApp({ upstream, logger: logs.logger });
});
afterAll(async () => {
  test.close();
  await upstream.close();
  await fake.close();
});

const slug = (method: string, path: string) => `${method}${path.replaceAll('/', '_')}`;

describe.each(ROUTES)('%s %s', (method, path, body) => {
  it('accepts a key in Authorization: Bearer, api-key and x-api-key', async () => {
    const key = test.issueKey(`ok-${slug(method, path)}`);
    const variants: Array<Record<string, string>> = [{ authorization: `Bearer ${key}` }, { 'api-key': key }, { 'x-api-key': key }];
    for (const headers of variants) {
      const res = await call(method, path, body, headers);
      expect(res.status, JSON.stringify(Object.keys(headers))).toBe(200);
    }
  });

  it('refuses a missing, unknown, revoked or expired key with 401 and a stable code', async () => {
    const missing = await call(method, path, body, {});
    expect(missing.status).toBe(401);
    expect(await code(missing)).toBe('missing_api_key');

    const unknown = await call(method, path, body, { authorization: 'Bearer tg-0000000000000000000000000000000000000000000' });
    expect(unknown.status).toBe(401);
    expect(await code(unknown)).toBe('invalid_api_key');

    const revokedKey = test.issueKey(`revoked-${slug(method, path)}`);
    test.store.revokeKey(`revoked-${slug(method, path)}`);
    test.keys.refresh();
    const revoked = await call(method, path, body, { authorization: `Bearer ${revokedKey}` });
    expect(revoked.status).toBe(401);
    expect(await code(revoked)).toBe('key_revoked');

    const expiredKey = test.issueKey(`expired-${slug(method, path)}`, { limits: [] }, { expiresAt: Date.now() - 1 });
    const expired = await call(method, path, body, { authorization: `Bearer ${expiredKey}` });
    expect(expired.status).toBe(401);
    expect(await code(expired)).toBe('key_expired');
  });

  it("refuses a key an operator suspended with 403 key_suspended, and passes it once it's lifted", async () => {
    const name = `suspended-${slug(method, path)}`;
    const key = test.issueKey(name);
    const view = await test.store.async().suspendKey(name);
    test.keys.refresh();
    const refused = await call(method, path, body, { authorization: `Bearer ${key}` });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    const since = new Date(view.suspended!.at).toISOString();
    expect(refused.headers.get('x-tollgate-suspended-since')).toBe(since);
    expect(((await refused.json()) as { error: unknown }).error).toEqual({
      code: 'key_suspended',
      type: 'permission_error',
      param: null,
      message: `This API key is suspended by an operator since ${since}; ask them to lift the suspension.`,
    });
    await test.store.async().unsuspendKey(name);
    test.keys.refresh();
    expect((await call(method, path, body, { authorization: `Bearer ${key}` })).status).toBe(200);
  });
});

describe('model allowlists', () => {
  it('refuses a model the key may not use with 403 model_not_allowed, recorded in the ledger', async () => {
    const key = test.issueKey('only-mini', { limits: [], models: ['gpt-4o-mini', 'text-embedding-*'] });
    const allowed = await call(
      'POST',
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: `Bearer ${key}` },
    );
    expect(allowed.status).toBe(200);
    const upstreamCalls = fake.requests.length;
    const refused = await call(
      'POST',
      '/v1/chat/completions',
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: `Bearer ${key}` },
    );
    expect(refused.status).toBe(403);
    const error = ((await refused.json()) as { error: { code: string; param: string; type: string } }).error;
    expect(error).toMatchObject({ code: 'model_not_allowed', param: 'model', type: 'permission_error' });
    expect(fake.requests.length).toBe(upstreamCalls); // never forwarded
    const embedding = await call('POST', '/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' }, { authorization: `Bearer ${key}` });
    expect(embedding.status).toBe(200);
    test.ledger.flush();
    const row = test.db.database.sqlite.prepare("SELECT status, error_code, http_status FROM ledger WHERE model = 'gpt-4o' AND endpoint = 'chat'").get();
    expect(row).toEqual({ status: 'rejected', error_code: 'model_not_allowed', http_status: 403 });
  });

  it('lists only the allowed models, and refuses to describe the others', async () => {
    const key = test.issueKey('list-mini', { limits: [], models: ['gpt-4o-mini'] });
    const list = await call('GET', '/v1/models', undefined, { authorization: `Bearer ${key}` });
    expect(((await list.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual(['gpt-4o-mini']);
    const other = await call('GET', '/v1/models/gpt-4o', undefined, { authorization: `Bearer ${key}` });
    expect(other.status).toBe(403);
  });
});

describe('a key whose stored policy is corrupt', () => {
  it('fails closed with 500 key_misconfigured instead of losing its limits', async () => {
    const key = test.issueKey('corrupt');
    test.db.database.sqlite.prepare(`UPDATE api_keys SET policy = '{"limits":[{"unit":"bananas"}]}', version = version + 100 WHERE name = 'corrupt'`).run();
    test.keys.refresh();
    const res = await call(
      'POST',
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status).toBe(500);
    expect(await code(res)).toBe('key_misconfigured');
  });
});

it('never writes a tenant key into the logs', () => {
  const all = logs.raw.join('\n');
  expect(all).not.toMatch(/tg-[0-9A-Za-z]{43}/);
  expect(all).not.toContain(UPSTREAM_KEY);
});
