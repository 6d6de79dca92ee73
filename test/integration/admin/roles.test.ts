/**
 * Named admins on a running proxy (docs/admins.md): each token opens the admin
 * API with its role — viewers read, operators change keys and tenants, admins
 * also manage admins — a revoked one stops at its next request, and every
 * write, from the admin API, the CLI on the database or the CLI through
 * --url, leaves exactly one audit row naming who made it. No secret reaches
 * the trail, its exports or the logs.
 */
import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';
import { parseCsv } from '../../support/csv.js';

const BOOTSTRAP = 'bootstrap-token-for-roles-0123456789';
let proxy: TestProxy;
const tokens: Record<'viewer' | 'operator' | 'admin', string> = { viewer: '', operator: '', admin: '' };
const api = (method: string, path: string, token: string, body?: unknown) =>
  fetch(`${proxy.server.url}/admin/api${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const json = async <T>(response: Response | Promise<Response>): Promise<T> => (await (await response).json()) as T;
interface Row {
  actor: { kind: string; name: string };
  action: string;
  target: { kind: string; id: string; name: string };
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}
const rowsOf = async (query: string): Promise<Row[]> => (await json<{ data: Row[] }>(api('GET', `/audit${query}`, BOOTSTRAP))).data;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: BOOTSTRAP });
  for (const role of ['viewer', 'operator', 'admin'] as const) {
    const created = await cli('--db', proxy.dbPath, 'admins', 'create', '--name', `${role}-1`, '--role', role, '--json');
    expect(created.code).toBe(0);
    tokens[role] = created.json<{ token: string }>().token;
  }
});
afterAll(async () => {
  await proxy.close();
});

describe('roles on the admin API', () => {
  it('lets a viewer read and refuses its writes with 403 naming the role needed', async () => {
    expect((await api('GET', '/keys', tokens.viewer)).status).toBe(200);
    expect((await api('GET', '/audit', tokens.viewer)).status).toBe(200);
    const refused = await api('POST', '/keys', tokens.viewer, { name: 'nope', policy: { limits: [] } });
    expect(refused.status).toBe(403);
    const error = (await refused.json()) as { error: { code: string; type: string; message: string } };
    expect(error.error).toMatchObject({ code: 'insufficient_role', type: 'permission_error' });
    expect(error.error.message).toContain('operator');
    expect((await api('PATCH', '/tenants/whatever', tokens.viewer, {})).status).toBe(403);
    expect((await rowsOf('?actor=viewer-1')).length).toBe(0);
  });

  it('lets an operator change keys, each change one audit row in its name, and refuses /admins', async () => {
    const created = await json<{ id: string; key: string }>(api('POST', '/keys', tokens.operator, { name: 'op-key', policy: { limits: [] } }));
    await api('PATCH', `/keys/${created.id}`, tokens.operator, { budget: { microUsd: 50_000_000, period: 'month' } });
    await api('POST', `/keys/${created.id}/revoke`, tokens.operator);
    const rows = await rowsOf(`?key=${created.id}`);
    expect(rows.map((r) => [r.action, r.actor.name])).toEqual([
      ['key.revoke', 'operator-1'],
      ['key.update', 'operator-1'],
      ['key.create', 'operator-1'],
    ]);
    expect(rows[1]!.after).toMatchObject({ policy: { budget: { microUsd: 50_000_000, period: 'month' } } });
    expect(JSON.stringify(rows)).not.toContain(created.key);
    expect((await api('GET', '/admins', tokens.operator)).status).toBe(403);
    const refused = await api('POST', '/admins', tokens.operator, { name: 'sneaky', role: 'admin' });
    expect(refused.status).toBe(403);
    expect((await refused.json()) as object).toMatchObject({ error: { code: 'insufficient_role' } });
  });

  it('lets an admin manage admins; a revoked admin token stops at its next request', async () => {
    const made = await api('POST', '/admins', tokens.admin, { name: 'temp', role: 'operator' });
    expect(made.status).toBe(201);
    const temp = (await made.json()) as { token: string; id: string; role: string };
    expect(temp.role).toBe('operator');
    expect((await api('GET', '/keys', temp.token)).status).toBe(200);
    const listed = await (await api('GET', '/admins', tokens.admin)).text();
    expect(listed).toContain('temp');
    expect(listed).not.toContain(temp.token);
    expect((await api('DELETE', `/admins/temp`, tokens.admin)).status).toBe(200);
    const after = await api('GET', '/keys', temp.token);
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe('invalid_admin_token');
    const rows = await rowsOf(`?target=admin&actor=admin-1`);
    expect(rows.map((r) => [r.action, r.target.name])).toEqual([
      ['admin.revoke', 'temp'],
      ['admin.create', 'temp'],
    ]);
  });

  it('records the CLI on the database as its OS user, and through --url as the token owner', async () => {
    const local = await cli('--db', proxy.dbPath, 'keys', 'create', '--name', 'cli-key', '--rpm', '10', '--json');
    expect(local.code).toBe(0);
    const remote = await cli('--url', proxy.server.url, '--admin-token', tokens.operator, 'keys', 'update', 'cli-key', '--rpm', '20');
    expect(remote.code).toBe(0);
    const viewer = await cli('--url', proxy.server.url, '--admin-token', tokens.viewer, 'keys', 'revoke', 'cli-key');
    expect(viewer.code).toBe(1);
    expect(viewer.stderr).toContain('operator');
    const rows = await rowsOf('?key=cli-key');
    expect(rows.map((r) => [r.action, r.actor.kind, r.actor.name])).toEqual([
      ['key.update', 'admin', 'operator-1'],
      ['key.create', 'cli', `cli:${userInfo().username}`],
    ]);
    expect((await cli('--db', proxy.dbPath, 'tenants', 'create', 'cli-co')).code).toBe(0);
    const tokenMade = await cli('--db', proxy.dbPath, 'dashboard-token', 'create', '--tenant', 'cli-co', '--json');
    expect(tokenMade.code).toBe(0);
    const [tokenRow] = await rowsOf('?target=tenant-token');
    expect(tokenRow).toMatchObject({ action: 'tenant-token.create', actor: { kind: 'cli' }, after: { tenant: 'cli-co', status: 'active' } });
    expect(JSON.stringify(tokenRow)).not.toContain(tokenMade.json<{ token: string }>().token);
  });

  it('exports the trail as CSV and NDJSON, from the CLI and the admin API, without a secret', async () => {
    const exported = await cli('--db', proxy.dbPath, 'audit', '--format', 'csv', '--since', '1d');
    expect(exported.code).toBe(0);
    const records = parseCsv(exported.stdout);
    expect(records[0]).toEqual(['id', 'at', 'actor_kind', 'actor', 'action', 'target_kind', 'target_id', 'target_name', 'before', 'after']);
    const body = records.slice(1);
    expect(body.length).toBe((await rowsOf('?limit=1000')).length);
    expect(body.some((r) => r[4] === 'admin.create' && r[3] === `cli:${userInfo().username}` && r[7] === 'viewer-1')).toBe(true);
    const table = await cli('--db', proxy.dbPath, 'audit', '--key', 'cli-key');
    expect(table.stdout).toContain('key.update');
    expect(table.stdout).toContain('operator-1');
    const ndjson = await (await api('GET', '/audit?format=ndjson&action=key.create', tokens.viewer)).text();
    const lines = ndjson
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.action === 'key.create')).toBe(true);
    const csv = await api('GET', '/audit?format=csv', tokens.viewer);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const everything = `${exported.stdout}${ndjson}${await csv.text()}${proxy.logs.raw.join('\n')}`;
    for (const token of [BOOTSTRAP, ...Object.values(tokens)]) expect(everything).not.toContain(token);
  });

  it('refuses bad audit queries with 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['?action=key.explode', 'action'],
      ['?limit=0', 'limit'],
      ['?format=xml', 'format'],
      ['?since=yesterday-ish', 'since'],
    ] as const) {
      const response = await api('GET', `/audit${query}`, tokens.viewer);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { param: string } }).error.param).toBe(param);
    }
  });
});
