/** The admin API: the CLI's operations over HTTP, behind the admin token; `tollgate --url` drives it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';

const ADMIN = 'admin-token-for-tests-0123456789';
let proxy: TestProxy;
let admin: (method: string, path: string, body?: unknown, token?: string) => Promise<Response>;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  admin = (method, path, body, token = ADMIN) =>
    fetch(`${proxy.server.url}/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
});
afterAll(async () => {
  await proxy.close();
});

describe('admin API', () => {
  it('refuses a missing or wrong token with 401', async () => {
    expect((await fetch(`${proxy.server.url}/admin/api/keys`)).status).toBe(401);
    const wrong = await admin('GET', '/keys', undefined, 'not-the-token-at-all');
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('invalid_admin_token');
  });

  it('creates a key that works at once, updates, rotates and revokes it', async () => {
    const created = await admin('POST', '/keys', {
      name: 'api-made',
      tenant: 'api-co',
      policy: { limits: [{ name: 'rpm', unit: 'requests', amount: 5, period: 'min', burst: 5 }] },
    });
    expect(created.status).toBe(201);
    const issued = (await created.json()) as { key: string; id: string; tenant: string };
    expect(issued.tenant).toBe('api-co');
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: issued.key, maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

    const updated = await admin('PATCH', `/keys/${issued.id}`, { models: ['gpt-4o'] });
    expect(((await updated.json()) as { policy: { models: string[] } }).policy.models).toEqual(['gpt-4o']);
    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
      OpenAI.PermissionDeniedError,
    );

    const rotated = (await (await admin('POST', `/keys/api-made/rotate`)).json()) as { key: string };
    await expect(client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const rotatedClient = new OpenAI({ baseURL: proxy.baseURL, apiKey: rotated.key, maxRetries: 0 });
    await rotatedClient.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });

    expect((await admin('POST', `/keys/${issued.id}/revoke`)).status).toBe(200);
    await expect(rotatedClient.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });

  it('answers bad input with 400 naming the field, and unknown keys with 404', async () => {
    const bad = await admin('POST', '/keys', { name: 'x', policy: { limits: [{ name: 'l', unit: 'bananas', amount: 1, period: 'min', burst: 1 }] } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('policy.limits.0.unit');
    const zero = await admin('POST', '/keys', { name: 'x', policy: { limits: [{ name: 'l', unit: 'requests', amount: 1, period: 'min', burst: 0.5 }] } });
    expect(zero.status).toBe(400);
    expect((await admin('GET', '/keys/nobody')).status).toBe(404);
    expect((await admin('GET', '/spend?by=nonsense')).status).toBe(400);
  });
});

describe('tollgate --url', () => {
  it('runs the CLI against the proxy through the admin API', async () => {
    const remote = (...args: string[]) => cli('--url', proxy.server.url, '--admin-token', ADMIN, ...args);
    const created = await remote('keys', 'create', '--name', 'remote-made', '--rpm', '30', '--json');
    expect(created.code).toBe(0);
    const key = created.json<{ key: string; name: string }>();
    expect(key.key).toMatch(/^tg-/);
    const listed = await remote('keys', 'list', '--json');
    expect(listed.json<Array<{ name: string }>>().map((k) => k.name)).toContain('remote-made');
    expect((await remote('keys', 'show', 'remote-made', '--json')).json<{ key?: string }>().key).toBeUndefined();
    expect((await remote('spend', '--by', 'key', '--json')).code).toBe(0);
    const revoked = await remote('keys', 'revoke', 'remote-made');
    expect(revoked.stdout).toContain('Revoked key "remote-made"');
    const wrongToken = await cli('--url', proxy.server.url, '--admin-token', 'wrong-token-0123456789', 'keys', 'list');
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toContain('admin token');
  });
});

describe('admin API disabled', () => {
  it('answers 404 admin_disabled when no admin token is configured', async () => {
    const plain = await startTestProxy();
    try {
      const res = await fetch(`${plain.server.url}/admin/api/keys`, { headers: { authorization: 'Bearer anything-at-all-here' } });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('admin_disabled');
    } finally {
      await plain.close();
    }
  });
});
