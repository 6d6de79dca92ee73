/**
 * The raw ledger export on replicas (TOLLGATE_DATABASE_URL) reads
 * PostgreSQL's ledger, every node's rows (src/storage/postgres/ledger-export.ts).
 * The bytes and the order, the same as a node's SQLite file gives, are the
 * contract's (test/integration/storage/ledger-export.contract.test.ts); here
 * what only PostgreSQL does:
 *
 * - The pages: the next page is read only when the consumer asks; no pooled
 *   connection is held between pages or after the consumer stops.
 * - Two whole nodes in-process: either node's admin API export, and the CLI
 *   on the replica config, carry the rows served by both; PostgreSQL
 *   unreachable is a 503 before any byte, and a CLI error.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { openPg, type PgPool } from '../../../src/storage/postgres/open.js';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { Metrics } from '../../../src/metrics.js';
import { ledgerExporter, type LedgerExportFormat } from '../../../src/reports/export.js';
import type { LedgerExportQuery } from '../../../src/storage/ledger-export.js';
import { postgresLedgerExport } from '../../../src/storage/postgres/ledger-export.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { cli } from '../../support/cli.js';
import { parseCsv } from '../../support/csv.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

const at = (iso: string) => Date.parse(iso);

const exportPgLedger = (pool: PgPool, query: LedgerExportQuery, format: LedgerExportFormat) => ledgerExporter(postgresLedgerExport(pool))(query, format);

async function collect(chunks: AsyncGenerator<string, void, undefined>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += chunk;
  return text;
}

describe('the export on PostgreSQL', () => {
  let pg: TempPostgres;
  beforeEach(async () => {
    pg = await createTempPostgres();
  });
  afterEach(async () => {
    await pg.drop();
  });

  /** `rows` ledger rows inserted directly (the writer and shipper are not what this measures), one a millisecond. */
  async function fillPg(rows: number): Promise<void> {
    const key = (await new PgKeyStore(pg.pool).createKey({ name: 'bulk', policy: { limits: [] } })).view;
    await pg.pool.query(
      `INSERT INTO ledger (request_id, key_id, created_at, completed_at, endpoint, model, stream, status, http_status, cost_micros, prompt_tokens, completion_tokens)
       SELECT 'bulk-' || lpad(i::text, 6, '0'), $1, $2::bigint + i, $2::bigint + i + 10, 'chat', 'gpt-4o-mini', i % 2 = 0, 'ok', 200, i, 10, 20
       FROM generate_series(0, $3 - 1) AS i`,
      [key.id, at('2026-11-02T00:00:00Z'), rows],
    );
  }

  it('reads the next page only when asked, and holds no connection between pages or after the consumer stops', async () => {
    await fillPg(2_500);
    const chunks = exportPgLedger(pg.pool, { sinceMs: at('2026-11-02T00:00:00Z'), untilMs: at('2026-11-03T00:00:00Z') }, 'ndjson');
    const first = await chunks.next();
    expect(first.value!.split('\n').length - 1).toBe(1_000);
    // Paused mid-export: every client the pool opened is idle again.
    expect(pg.pool.totalCount).toBeGreaterThan(0);
    expect(pg.pool.idleCount).toBe(pg.pool.totalCount);
    // A row shipped now, after the rows read so far, is in a page read after it: pages are read as the consumer asks.
    await pg.pool.query(
      `INSERT INTO ledger (request_id, key_id, created_at, endpoint, model, stream, status)
       SELECT 'late-row', key_id, created_at + 1, 'chat', 'gpt-4o-mini', false, 'pending' FROM ledger ORDER BY created_at DESC LIMIT 1`,
    );
    const second = await chunks.next();
    expect(second.value!.split('\n').length - 1).toBe(1_000);
    // The consumer stops (a client disconnects, `| head -1`): nothing is left checked out.
    await chunks.return(undefined);
    expect(pg.pool.idleCount).toBe(pg.pool.totalCount);
    expect(pg.pool.waitingCount).toBe(0);
    const all = await collect(exportPgLedger(pg.pool, { sinceMs: at('2026-11-02T00:00:00Z'), untilMs: at('2026-11-03T00:00:00Z') }, 'csv'));
    expect(all.trimEnd().split('\r\n').at(-1)).toMatch(/^late-row,/);
    expect(all.trimEnd().split('\r\n').length).toBe(1 + 2_501);
  });

  it('fails with ledger_unavailable, before the first chunk, when PostgreSQL does not answer', async () => {
    const dead = openPg('postgres://postgres@127.0.0.1:1/nowhere', { connectTimeoutMs: 500 });
    try {
      const chunks = exportPgLedger(dead, { sinceMs: 0, untilMs: Date.now() }, 'csv');
      await expect(chunks.next()).rejects.toMatchObject({ code: 'ledger_unavailable', message: expect.stringContaining('PostgreSQL') as unknown });
    } finally {
      await dead.end();
    }
  });
});

describe('two whole nodes', () => {
  const ADMIN_TOKEN = 'pg-export-admin-token-0123456789';
  let pg: TempPostgres;
  let relay: TcpProxy;
  let fake: FakeUpstream;
  let files: TempDatabase[];
  let nodes: Tollgate[];
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    pg = await createTempPostgres();
    // The first node reaches PostgreSQL through a relay the last test cuts.
    relay = await startTcpProxy('127.0.0.1', Number(new URL(pg.url).port || 5432));
    const relayUrl = new URL(pg.url);
    relayUrl.port = String(relay.port);
    fake = await startFakeUpstream({ apiKey: 'sk-pg-export' });
    files = [openTempDatabase(), openTempDatabase()];
    nodes = files.map((file, i) =>
      buildTollgate(
        loadConfig({
          TOLLGATE_DB: file.path,
          TOLLGATE_DATABASE_URL: i === 0 ? relayUrl.toString() : pg.url,
          TOLLGATE_UPSTREAM_URL: fake.url,
          TOLLGATE_UPSTREAM_KEY: 'sk-pg-export',
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
    await relay?.close();
    await fake?.close();
    await pg?.drop();
  });

  async function createKey(tollgate: Tollgate, name: string, tenant?: string): Promise<{ id: string; key: string }> {
    const response = await tollgate.app.request('/admin/api/keys', {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name, ...(tenant ? { tenant } : {}) }),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as { key: string; id: string };
  }

  async function chat(tollgate: Tollgate, key: string, model: string): Promise<string> {
    const response = await tollgate.app.request('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'count the foxes' }] }),
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    return response.headers.get('x-request-id')!;
  }

  /** `tollgate ledger export` in-process on the replica config: TOLLGATE_DATABASE_URL and no --db (the file it names is never opened). */
  async function cliOnReplica(databaseUrl: string, ...args: string[]) {
    const saved = { ...process.env };
    Object.assign(process.env, { TOLLGATE_DATABASE_URL: databaseUrl, TOLLGATE_DB: '/nonexistent/never-opened.db', TOLLGATE_CONFIG: '' });
    try {
      return await cli('ledger', 'export', ...args);
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  }

  it('exports from either node, through the admin API and the CLI, the rows served by both', async () => {
    const north = await createKey(nodes[0]!, 'north-team', 'acme');
    const south = await createKey(nodes[1]!, 'south-team');
    await waitFor(
      () => nodes.every((tollgate) => tollgate.keyStore.authKeyById(north.id) !== undefined && tollgate.keyStore.authKeyById(south.id) !== undefined),
      'keys on both nodes',
    );
    const served = [
      await chat(nodes[0]!, north.key, 'gpt-4o-mini'),
      await chat(nodes[1]!, north.key, 'gpt-4o'),
      await chat(nodes[1]!, south.key, 'gpt-4o-mini'),
    ];
    await fake.settled();
    await waitFor(
      async () =>
        (await pg.pool.query<{ n: number }>("SELECT count(*) AS n FROM ledger WHERE status <> 'pending'")).rows[0]!.n === 3 &&
        nodes.every((t) => t.replica!.shipper.depth() === 0),
      'every request shipped and settled',
      15_000,
    );

    const ids = (ndjson: string) =>
      ndjson
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { request_id: string }).request_id)
        .sort();
    for (const tollgate of nodes) {
      const response = await tollgate.app.request('/admin/api/ledger.ndjson?since=today', { headers: admin });
      expect(response.status).toBe(200);
      expect(ids(await response.text())).toEqual([...served].sort());
      // One key's rows, made on both nodes.
      const csv = await (await tollgate.app.request('/admin/api/ledger.csv?since=today&key=north-team', { headers: admin })).text();
      expect(parseCsv(csv).length).toBe(1 + 2);
      const acme = await (await tollgate.app.request('/admin/api/ledger.ndjson?since=today&tenant=acme', { headers: admin })).text();
      expect(ids(acme)).toEqual([served[0], served[1]].sort());
    }
    // Each node's own file holds only its share.
    expect(files[0]!.database.sqlite.prepare('SELECT count(*) FROM ledger').pluck().get()).toBe(1);

    const fromCli = await cliOnReplica(pg.url, '--since', 'today', '--format', 'ndjson');
    expect(fromCli.code).toBe(0);
    expect(ids(fromCli.stdout)).toEqual([...served].sort());
    const oneKey = await cliOnReplica(pg.url, '--since', 'today', '--key', 'north-team');
    expect(parseCsv(oneKey.stdout).length).toBe(1 + 2);
    // The same bytes as the admin API's.
    expect(oneKey.stdout).toBe(await (await nodes[1]!.app.request('/admin/api/ledger.csv?since=today&key=north-team', { headers: admin })).text());
  }, 60_000);

  it('answers 503 before any byte, and the CLI fails clearly, while PostgreSQL does not answer', async () => {
    const down = await cliOnReplica('postgres://postgres@127.0.0.1:1/nowhere', '--since', 'today');
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr).toContain('PostgreSQL');

    await relay.cut();
    try {
      const response = await nodes[0]!.app.request('/admin/api/ledger.csv?since=today', { headers: admin });
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ error: { code: 'ledger_unavailable', type: 'server_error' } });
      // A filter names a key or tenant, looked up in PostgreSQL first; so do the other admin reads:
      // each is the same 503, not a driver error as a 500.
      for (const path of ['/admin/api/ledger.csv?since=today&key=north-team', '/admin/api/keys', '/admin/api/spend?since=today']) {
        const refused = await nodes[0]!.app.request(path, { headers: admin });
        expect(refused.status, path).toBe(503);
        expect(await refused.json(), path).toMatchObject({ error: { code: 'ledger_unavailable', message: expect.stringContaining('PostgreSQL') as unknown } });
      }
    } finally {
      await relay.restore();
    }
    expect((await nodes[0]!.app.request('/admin/api/ledger.csv?since=today', { headers: admin })).status).toBe(200);
  }, 30_000);
});
