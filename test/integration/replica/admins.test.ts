/**
 * Named admins and the audit trail on replicas (docs/admins.md): two whole
 * nodes in-process, each with its own SQLite file, one PostgreSQL. An admin
 * created with the CLI on PostgreSQL opens both nodes' admin API and
 * dashboard; revoked through one node, its token and its session on the
 * other stop at their next request; every node's writes land in one trail in
 * PostgreSQL, and neither node's file holds an admin or a row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { Metrics } from '../../../src/metrics.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { cliOnPostgres } from '../../support/cli.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

const ADMIN_TOKEN = 'pg-admins-bootstrap-token-0123456789';

let pg: TempPostgres;
let fake: FakeUpstream;
let files: TempDatabase[];
let nodes: Tollgate[];

beforeAll(async () => {
  pg = await createTempPostgres();
  fake = await startFakeUpstream({ apiKey: 'sk-pg-admins' });
  files = [openTempDatabase(), openTempDatabase()];
  nodes = files.map((file) =>
    buildTollgate(
      loadConfig({
        TOLLGATE_DB: file.path,
        TOLLGATE_DATABASE_URL: pg.url,
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: 'sk-pg-admins',
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      }),
      { logger: captureLogs('silent').logger, database: file.database, metrics: new Metrics({ defaultMetrics: false }), limitSnapshot: undefined },
    ),
  );
  for (const tollgate of nodes) await tollgate.start();
}, 60_000);

afterAll(async () => {
  for (const tollgate of nodes ?? []) await tollgate.close();
  for (const file of files ?? []) file.remove();
  await fake?.close();
  await pg?.drop();
});

const call = (tollgate: Tollgate, method: string, path: string, token: string, body?: unknown) =>
  Promise.resolve(
    tollgate.app.request(`/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );

async function login(tollgate: Tollgate, token: string): Promise<string> {
  const response = await tollgate.app.request('/dashboard/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, next: '/dashboard' }).toString(),
  });
  expect(response.status).toBe(303);
  return response.headers.get('set-cookie')!.split(';')[0]!;
}

describe('admins on replicas', () => {
  it('opens every node, is revoked on every node at once, and writes one trail in PostgreSQL', async () => {
    const made = await cliOnPostgres(pg.url, 'admins', 'create', '--name', 'ops', '--role', 'operator', '--json');
    expect(made.code, made.stderr).toBe(0);
    const token = made.json<{ token: string }>().token;
    const [a, b] = nodes as [Tollgate, Tollgate];
    expect((await call(a, 'POST', '/keys', token, { name: 'from-a', policy: { limits: [] } })).status).toBe(201);
    expect((await call(b, 'PATCH', '/keys/from-a', token, { models: ['gpt-4o'] })).status).toBe(200);
    const cookie = await login(b, token);
    expect((await b.app.request('/dashboard', { headers: { cookie } })).status).toBe(200);

    const boss = await call(a, 'POST', '/admins', ADMIN_TOKEN, { name: 'boss', role: 'admin' });
    const bossToken = ((await boss.json()) as { token: string }).token;
    expect((await call(a, 'POST', '/admins/ops/revoke', bossToken)).status).toBe(200);
    // The other node refuses the token and ends the session at their next request: nothing to wait for.
    expect((await call(b, 'GET', '/keys', token)).status).toBe(401);
    const page = await b.app.request('/dashboard', { headers: { cookie } });
    expect(page.status).toBe(303);

    const trail = await cliOnPostgres(pg.url, 'audit', '--format', 'ndjson');
    expect(trail.code, trail.stderr).toBe(0);
    const rows = trail.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { action: string; actor: { name: string }; target: { name: string } });
    expect(rows.map((r) => `${r.action} ${r.target.name} by ${r.actor.name}`)).toEqual([
      'admin.revoke ops by boss',
      'admin.create boss by bootstrap',
      'key.update from-a by ops',
      'key.create from-a by ops',
      expect.stringMatching(/^admin\.create ops by cli:/),
    ]);
    for (const file of files) {
      expect(file.database.sqlite.prepare('SELECT count(*) AS n FROM admins').get()).toEqual({ n: 0 });
      expect(file.database.sqlite.prepare('SELECT count(*) AS n FROM audit_log').get()).toEqual({ n: 0 });
    }
  });
});
