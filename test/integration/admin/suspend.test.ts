/**
 * An operator's suspension on a running proxy (docs/admins.md): suspended
 * through the admin API or the CLI, the key's requests get 403 key_suspended
 * within a second, saying since when and asking SDKs not to retry; lifted,
 * they pass again. Each change is one audit row naming who made it, and a
 * viewer may not suspend.
 */
import { userInfo } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';

const BOOTSTRAP = 'bootstrap-token-for-suspend-0123456789';
let proxy: TestProxy;
const tokens = { viewer: '', operator: '' };
const api = (method: string, path: string, token: string) =>
  fetch(`${proxy.server.url}/admin/api${path}`, { method, headers: { authorization: `Bearer ${token}` } });

interface Row {
  actor: { kind: string; name: string };
  action: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}
const suspensionRows = async (key: string): Promise<Row[]> =>
  ((await (await api('GET', `/audit?key=${key}`, BOOTSTRAP)).json()) as { data: Row[] }).data.filter((r) => r.action.endsWith('suspend')).reverse();

async function chat(key: string): Promise<Response> {
  const response = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.clone().arrayBuffer();
  return response;
}

/** Sends requests until one answers `status`; how long that took. */
async function timeUntil(key: string, status: number): Promise<{ ms: number; response: Response }> {
  const started = Date.now();
  while (Date.now() - started < 5000) {
    const response = await chat(key);
    if (response.status === status) return { ms: Date.now() - started, response };
  }
  throw new Error(`status never became ${status}`);
}

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: BOOTSTRAP });
  for (const role of ['viewer', 'operator'] as const) {
    const created = await cli('--db', proxy.dbPath, 'admins', 'create', '--name', `${role}-1`, '--role', role, '--json');
    expect(created.code).toBe(0);
    tokens[role] = created.json<{ token: string }>().token;
  }
});
afterAll(async () => {
  await proxy.close();
});

it('refuses a key the admin API suspends with 403 key_suspended within a second, and passes it again once unsuspended', async () => {
  const key = proxy.issueKey('leaky');
  expect((await chat(key)).status).toBe(200);

  const viewer = await api('POST', '/keys/leaky/suspend', tokens.viewer);
  expect(viewer.status).toBe(403);
  expect(((await viewer.json()) as { error: { code: string } }).error.code).toBe('insufficient_role');

  const suspended = await api('POST', '/keys/leaky/suspend', tokens.operator);
  expect(suspended.status).toBe(200);
  const view = (await suspended.json()) as { status: string; suspended: { at: number; by: string } };
  expect(view).toMatchObject({ status: 'suspended', suspended: { by: 'operator-1' } });

  const refused = await timeUntil(key, 403);
  expect(refused.ms).toBeLessThan(1000);
  expect(refused.response.headers.get('x-should-retry')).toBe('false');
  const error = ((await refused.response.json()) as { error: { code: string; type: string; message: string } }).error;
  expect(error).toMatchObject({ code: 'key_suspended', type: 'permission_error' });
  expect(error.message).toContain('suspended by an operator');
  expect(error.message).toContain(new Date(view.suspended.at).toISOString());
  expect(error.message).not.toContain(key);

  // Again: nothing changes and no row is added.
  expect((await api('POST', '/keys/leaky/suspend', tokens.operator)).status).toBe(200);
  const lifted = await api('POST', '/keys/leaky/unsuspend', tokens.operator);
  expect(((await lifted.json()) as { status: string }).status).toBe('active');
  expect((await timeUntil(key, 200)).ms).toBeLessThan(1000);

  expect((await suspensionRows('leaky')).map((r) => [r.action, r.actor.name, r.before?.status, r.after?.status])).toEqual([
    ['key.suspend', 'operator-1', 'active', 'suspended'],
    ['key.unsuspend', 'operator-1', 'suspended', 'active'],
  ]);
});

it('suspends and unsuspends from the CLI on the database, each one row as cli:<user>', async () => {
  const key = proxy.issueKey('cli-leaky');
  const suspended = await cli('--db', proxy.dbPath, 'keys', 'suspend', 'cli-leaky');
  expect(suspended.code).toBe(0);
  expect(suspended.stdout).toContain('Suspended key "cli-leaky"');
  expect((await timeUntil(key, 403)).ms).toBeLessThan(1000);
  const shown = await cli('--db', proxy.dbPath, 'keys', 'show', 'cli-leaky');
  expect(shown.stdout).toMatch(/status\s+suspended/);
  expect(shown.stdout).toContain(`by cli:${userInfo().username}`);
  expect((await cli('--db', proxy.dbPath, 'keys', 'list')).stdout).toMatch(/cli-leaky.*suspended/);

  expect((await cli('--db', proxy.dbPath, 'keys', 'unsuspend', 'cli-leaky')).code).toBe(0);
  expect((await timeUntil(key, 200)).ms).toBeLessThan(1000);
  expect((await suspensionRows('cli-leaky')).map((r) => [r.action, r.actor.kind, r.actor.name])).toEqual([
    ['key.suspend', 'cli', `cli:${userInfo().username}`],
    ['key.unsuspend', 'cli', `cli:${userInfo().username}`],
  ]);

  // Through --url, as the token's owner; a viewer's is refused.
  const remote = await cli('--url', proxy.server.url, '--admin-token', tokens.viewer, 'keys', 'suspend', 'cli-leaky');
  expect(remote.code).toBe(1);
  expect(remote.stderr).toContain('operator');
});
