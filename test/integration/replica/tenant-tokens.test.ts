/**
 * Tenants' dashboard tokens and reconciliation results on replicas (issue
 * 13): two whole nodes in-process, each with its own SQLite file, one
 * PostgreSQL (reached through a relay the test can cut).
 *
 * - A token issued by the CLI with TOLLGATE_DATABASE_URL logs in on both
 *   nodes, scoped to its tenant (another tenant's key is 404); one issued on
 *   a node's admin API works on the other; revoked (CLI or the other node's
 *   admin API) or expired, it is refused on both at the next request.
 * - Tokens live in PostgreSQL only: neither file holds one, and a token in a
 *   node's own file does not log in there.
 * - PostgreSQL unreachable: login and session answer 503, never the file.
 * - `tollgate reconcile` run against one node's file stores its result in
 *   PostgreSQL, and it is the one both nodes' overviews show.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import type { OverviewView } from '../../../src/dashboard/index.js';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { Metrics } from '../../../src/metrics.js';
import type { ReconcileResult } from '../../../src/reconcile/run.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { cli, type CliResult } from '../../support/cli.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

const ADMIN_TOKEN = 'pg-tenant-tokens-admin-token-0123456789';
const PROVIDER_ADMIN_KEY = 'sk-admin-pg-tenant-tokens-0123456789';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

let pg: TempPostgres;
let relay: TcpProxy;
let fake: FakeUpstream;
let files: TempDatabase[];
let nodes: Tollgate[];
const clock = { now: Date.now() };
const keys: Record<string, { id: string; key: string }> = {};

beforeAll(async () => {
  pg = await createTempPostgres();
  relay = await startTcpProxy('127.0.0.1', Number(new URL(pg.url).port || 5432));
  const relayed = new URL(pg.url);
  relayed.port = String(relay.port);
  fake = await startFakeUpstream({ apiKey: 'sk-pg-tenant-tokens', billing: { adminKey: PROVIDER_ADMIN_KEY } });
  files = [openTempDatabase(), openTempDatabase()];
  nodes = files.map((file) =>
    buildTollgate(
      loadConfig({
        TOLLGATE_DB: file.path,
        TOLLGATE_DATABASE_URL: relayed.toString(),
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: 'sk-pg-tenant-tokens',
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      }),
      {
        logger: captureLogs('silent').logger,
        database: file.database,
        metrics: new Metrics({ defaultMetrics: false }),
        limitSnapshot: undefined,
        now: () => clock.now,
      },
    ),
  );
  for (const tollgate of nodes) await tollgate.start();
  const store = new PgKeyStore(pg.pool);
  for (const [name, tenant] of [
    ['acme-search', 'acme'],
    ['globex-secret', 'globex'],
  ] as const) {
    const issued = await store.createKey({ name, tenant, policy: { limits: [] } });
    keys[name] = { id: issued.view.id, key: issued.key };
  }
  await waitFor(() => nodes.every((tollgate) => Object.values(keys).every((k) => tollgate.keyStore.authKeyById(k.id) !== undefined)), 'keys on both nodes');
}, 60_000);

afterAll(async () => {
  for (const tollgate of nodes ?? []) await tollgate.close();
  for (const file of files ?? []) file.remove();
  await relay?.close();
  await fake?.close();
  await pg?.drop();
});

/** The CLI in-process with these settings on top of the test's environment. */
async function withEnv(env: Record<string, string>, run: () => Promise<CliResult>): Promise<CliResult> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return await run();
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

/** `tollgate dashboard-token …` on PostgreSQL (TOLLGATE_DATABASE_URL, no --db), as on a host of the cluster. */
async function tokenCli(...args: string[]): Promise<CliResult> {
  const result = await withEnv({ TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_DB: '/nonexistent/never-opened.db' }, () => cli('dashboard-token', ...args));
  expect(result.code, result.stderr).toBe(0);
  return result;
}

async function issueByCli(...args: string[]): Promise<{ token: string; id: string; prefix: string }> {
  return (await tokenCli('create', '--tenant', 'acme', '--json', ...args)).json();
}

/** The login form: the session cookie it sets, or the status it answered instead. */
async function login(tollgate: Tollgate, token: string): Promise<{ status: number; cookie?: string }> {
  const response = await tollgate.app.request('/dashboard/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, next: '/dashboard' }).toString(),
  });
  await response.arrayBuffer();
  const cookie = response.headers.get('set-cookie')?.split(';')[0];
  return { status: response.status, ...(response.status === 303 && cookie !== undefined ? { cookie } : {}) };
}

async function sessionOn(tollgate: Tollgate, token: string): Promise<string> {
  const answer = await login(tollgate, token);
  expect(answer.status).toBe(303);
  return answer.cookie!;
}

/** What a session gets: the overview page and the JSON it polls. */
async function seen(tollgate: Tollgate, cookie: string): Promise<{ page: number; json: number }> {
  const page = await tollgate.app.request('/dashboard', { headers: { cookie } });
  const json = await tollgate.app.request('/admin/api/dashboard/overview', { headers: { cookie } });
  await page.arrayBuffer();
  await json.arrayBuffer();
  return { page: page.status, json: json.status };
}

describe('a tenant’s dashboard token on two nodes', () => {
  it('issued by the CLI on PostgreSQL, logs in on both nodes and sees only its tenant', async () => {
    const issued = await issueByCli('--label', 'acme finance');
    for (const tollgate of nodes) {
      const cookie = await sessionOn(tollgate, issued.token);
      const overview = (await (await tollgate.app.request('/admin/api/dashboard/overview', { headers: { cookie } })).json()) as OverviewView;
      expect(overview.tenant).toMatchObject({ name: 'acme' });
      expect((await tollgate.app.request(`/admin/api/keys/${keys['acme-search']!.id}`, { headers: { cookie } })).status).toBe(200);
      const foreign = await tollgate.app.request(`/admin/api/keys/${keys['globex-secret']!.id}`, { headers: { cookie } });
      expect(foreign.status).toBe(404);
      expect(await foreign.text()).not.toContain('globex');
      expect((await tollgate.app.request(`/dashboard/keys/${keys['globex-secret']!.id}`, { headers: { cookie } })).status).toBe(404);
    }
    // A session bought on one node is good on the other (both sign with the same admin token).
    const fromFirst = await sessionOn(nodes[0]!, issued.token);
    expect(await seen(nodes[1]!, fromFirst)).toEqual({ page: 200, json: 200 });
    // Listed by every node's admin API and by the CLI, never with its secret; no node's file holds a token.
    for (const tollgate of nodes) {
      const listed = await (await tollgate.app.request('/admin/api/dashboard-tokens?tenant=acme', { headers: admin })).text();
      expect(listed).toContain(issued.id);
      expect(listed).not.toContain(issued.token);
    }
    expect((await tokenCli('list', '--tenant', 'acme')).stdout).toContain(issued.prefix);
    for (const file of files) expect(file.database.sqlite.prepare('SELECT count(*) FROM dashboard_tokens').pluck().get()).toBe(0);
  });

  it('revoked by the CLI: every session on every node ends at its next request, and it logs in nowhere', async () => {
    const issued = await issueByCli();
    const cookies = [await sessionOn(nodes[0]!, issued.token), await sessionOn(nodes[1]!, issued.token)];
    for (const [i, tollgate] of nodes.entries()) expect(await seen(tollgate, cookies[i]!)).toEqual({ page: 200, json: 200 });
    await tokenCli('revoke', issued.prefix);
    for (const [i, tollgate] of nodes.entries()) {
      expect(await seen(tollgate, cookies[i]!)).toEqual({ page: 303, json: 401 });
      expect((await login(tollgate, issued.token)).status).toBe(401);
    }
  });

  it("issued on one node's admin API, works on the other; revoked on the other's, refused on both", async () => {
    const created = await nodes[0]!.app.request('/admin/api/dashboard-tokens', {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'acme', label: 'made on node 0' }),
    });
    expect(created.status).toBe(201);
    const issued = (await created.json()) as { token: string; id: string };
    const onSecond = await sessionOn(nodes[1]!, issued.token);
    const onFirst = await sessionOn(nodes[0]!, issued.token);
    const revoked = await nodes[1]!.app.request(`/admin/api/dashboard-tokens/${issued.id}/revoke`, { method: 'POST', headers: admin });
    expect(((await revoked.json()) as { status: string }).status).toBe('revoked');
    expect(await seen(nodes[0]!, onFirst)).toEqual({ page: 303, json: 401 });
    expect(await seen(nodes[1]!, onSecond)).toEqual({ page: 303, json: 401 });
  });

  it('expired: its sessions end and it logs in on neither node', async () => {
    const issued = await issueByCli('--expires', '90m');
    const cookies = [await sessionOn(nodes[0]!, issued.token), await sessionOn(nodes[1]!, issued.token)];
    const before = clock.now;
    clock.now = before + 91 * 60_000;
    try {
      for (const [i, tollgate] of nodes.entries()) {
        expect(await seen(tollgate, cookies[i]!)).toEqual({ page: 303, json: 401 });
        expect((await login(tollgate, issued.token)).status).toBe(401);
      }
    } finally {
      clock.now = before;
    }
  });

  it("a token in a node's own SQLite file does not log in there: a replica reads PostgreSQL only", async () => {
    const local = await withEnv({ TOLLGATE_DATABASE_URL: pg.url }, () =>
      cli('--db', files[0]!.path, 'dashboard-token', 'create', '--tenant', 'acme', '--json'),
    );
    expect(local.code, local.stderr).toBe(0);
    expect((await login(nodes[0]!, local.json<{ token: string }>().token)).status).toBe(401);
  });

  it('PostgreSQL unreachable: login and session answer 503 (never the node’s file), and work again once it is back', async () => {
    const issued = await issueByCli();
    const cookie = await sessionOn(nodes[0]!, issued.token);
    await relay.cut();
    try {
      const refused = await nodes[0]!.app.request('/dashboard/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: issued.token, next: '/dashboard' }).toString(),
      });
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'ledger_unavailable',
        message: expect.stringContaining('PostgreSQL') as unknown,
      });
      expect(await seen(nodes[0]!, cookie)).toEqual({ page: 503, json: 503 });
    } finally {
      await relay.restore();
    }
    await waitFor(async () => (await seen(nodes[0]!, cookie)).page === 200, 'the session to work again', 15_000);
    expect((await login(nodes[0]!, issued.token)).status).toBe(303);
  }, 30_000);
});

describe('reconciliation results on two nodes', () => {
  it('a run against one node’s ledger is stored in PostgreSQL and is the overview of both nodes', async () => {
    const chat = await nodes[0]!.app.request('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys['acme-search']!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'count the foxes' }] }),
    });
    expect(chat.status).toBe(200);
    await chat.arrayBuffer();
    await fake.settled();
    await waitFor(
      () => files[0]!.database.sqlite.prepare("SELECT count(*) FROM ledger WHERE status = 'ok'").pluck().get() === 1,
      'the request settled in node 0’s file',
    );
    const run = await withEnv({ TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_PROVIDER_ADMIN_KEY: PROVIDER_ADMIN_KEY, TOLLGATE_PROVIDER_API_URL: fake.url }, () =>
      cli('--db', files[0]!.path, 'reconcile', '--since', 'today', '--json'),
    );
    expect(run.code, run.stderr).toBe(0);
    const result = run.json<ReconcileResult>();
    expect(result.totals.ledger.requests).toBe(1);
    for (const tollgate of nodes) {
      const overview = (await (await tollgate.app.request('/admin/api/dashboard/overview', { headers: admin })).json()) as OverviewView;
      expect(overview.reconciliations).toMatchObject([
        {
          ranAt: result.generatedAt,
          provider: result.provider,
          since: result.since,
          until: result.until,
          differences: result.differences,
          ledgerCostMicros: result.totals.ledger.costMicros,
        },
      ]);
    }
    // Stored once, in PostgreSQL: neither node's file has it.
    expect((await pg.pool.query<{ n: number }>('SELECT count(*) AS n FROM reconciliations')).rows[0]!.n).toBe(1);
    for (const file of files) expect(file.database.sqlite.prepare('SELECT count(*) FROM reconciliations').pluck().get()).toBe(0);
  }, 30_000);
});
