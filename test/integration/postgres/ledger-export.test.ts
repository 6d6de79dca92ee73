/**
 * The raw ledger export on replicas (TOLLGATE_DATABASE_URL) reads
 * PostgreSQL's ledger, every node's rows (src/reports/pg-export.ts).
 *
 * - The bytes: the same rows in a node's SQLite file and in PostgreSQL
 *   export byte-identical CSV and NDJSON (odd text, nulls, pending rows),
 *   whole or filtered by key, tenant and period.
 * - The pages: 5,000 rows, many sharing a millisecond across page
 *   boundaries, come complete and in order; the next page is read only when
 *   the consumer asks; no pooled connection is held between pages or after
 *   the consumer stops.
 * - Two whole nodes in-process: either node's admin API export, and the CLI
 *   on the replica config, carry the rows served by both; PostgreSQL
 *   unreachable is a 503 before any byte, and a CLI error.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { openPg, type PgPool } from '../../../src/storage/postgres/open.js';
import { PgKeyStore } from '../../../src/keys/pg-store.js';
import { KeySync } from '../../../src/keys/pg-sync.js';
import { LedgerShipper } from '../../../src/ledger/shipper.js';
import { LedgerWriter } from '../../../src/ledger/writer.js';
import { Metrics } from '../../../src/metrics.js';
import { ledgerExporter, type LedgerExportFormat } from '../../../src/reports/export.js';
import type { LedgerExportQuery } from '../../../src/storage/ledger-export.js';
import { postgresLedgerExport } from '../../../src/storage/postgres/ledger-export.js';
import { sqliteLedgerExport } from '../../../src/storage/sqlite/ledger-export.js';
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
const FORMATS: LedgerExportFormat[] = ['csv', 'ndjson'];
const ODD_MODELS = ['gpt-4o-mini', 'comma, "quoted"', 'line\nbreak\r\nand\ttab', 'модель-ü-🦊', '=HYPERLINK("x")', ' padded '];
const ODD_USERS = [undefined, 'Zoë, "the boss"', 'user\nwith newline', '日本語のユーザー'];

const exportPgLedger = (pool: PgPool, query: LedgerExportQuery, format: LedgerExportFormat) => ledgerExporter(postgresLedgerExport(pool))(query, format);
const exportLedger = (path: string, query: LedgerExportQuery, format: LedgerExportFormat) => ledgerExporter(sqliteLedgerExport(path))(query, format);

async function collect(chunks: AsyncGenerator<string, void, undefined>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += chunk;
  return text;
}

describe('the export on PostgreSQL', () => {
  let pg: TempPostgres;
  let file: TempDatabase;
  beforeEach(async () => {
    pg = await createTempPostgres();
    file = openTempDatabase();
  });
  afterEach(async () => {
    file.remove();
    await pg.drop();
  });

  it('writes the same bytes as the SQLite export over the same rows, whole and filtered', async () => {
    const store = new PgKeyStore(pg.pool);
    const alpha = (await store.createKey({ name: 'alpha', tenant: 'acme', policy: { limits: [] } })).view;
    const beta = (await store.createKey({ name: 'beta', policy: { limits: [] } })).view;
    await new KeySync(pg.pool, file.database, { url: pg.url }).pull();
    const writer = new LedgerWriter(file.database);
    // In time order (a node's file exports in the order written, PostgreSQL by time then request id); two rows share a millisecond.
    const times = Array.from({ length: 24 }, (_, i) => at('2026-11-01T00:00:00Z') + i * 3_600_000 * 3);
    times[5] = times[4]!;
    for (const [i, createdAt] of times.entries()) {
      const key = i % 3 === 0 ? beta : alpha;
      const requestId = `exp-${String(i).padStart(3, '0')}`;
      await writer.begin({
        requestId,
        keyId: key.id,
        tenantId: key.tenantId,
        createdAt,
        endpoint: i % 4 === 0 ? 'embeddings' : 'chat',
        model: ODD_MODELS[i % ODD_MODELS.length]!,
        stream: i % 2 === 0,
        estPromptTokens: 100 + i,
        estCompletionTokens: 50,
        estCostMicros: 1_000 + i,
        priceKnown: i % 5 !== 0,
        endUser: ODD_USERS[i % ODD_USERS.length],
        tags: i % 3 === 1 ? ['team,a', 'ünï'] : undefined,
      });
      // Every seventh stays pending: empty cells (JSON null) where nothing is known yet.
      if (i % 7 === 6) continue;
      writer.complete({
        requestId,
        completedAt: createdAt + 1_500,
        status: i % 5 === 0 ? 'upstream_error' : 'ok',
        httpStatus: i % 5 === 0 ? 502 : 200,
        promptTokens: 100 + i,
        cachedTokens: i % 4,
        completionTokens: 10 * i,
        reasoningTokens: 0,
        costMicros: 123_457 * i + 1,
        usageSource: 'reported',
        latencyMs: 1_500,
        ttftMs: i % 2 === 0 ? 200 : null,
        upstreamRequestId: i % 2 === 0 ? `chatcmpl-"${i}",x` : null,
        errorCode: i % 5 === 0 ? '@upstream\nerror' : null,
      });
    }
    writer.close();
    await new LedgerShipper(pg.pool, file.database).drain();

    const whole = { sinceMs: at('2026-10-01T00:00:00Z'), untilMs: at('2026-12-01T00:00:00Z') };
    const queries: LedgerExportQuery[] = [
      whole,
      { ...whole, keyId: alpha.id },
      { ...whole, keyId: beta.id },
      { ...whole, tenantId: alpha.tenantId! },
      // Instants cutting rows off at both ends (since included, until excluded).
      { sinceMs: times[4]!, untilMs: times[20]! },
      { sinceMs: times[4]! + 1, untilMs: times[20]! + 1, keyId: alpha.id },
      { sinceMs: at('2027-01-01T00:00:00Z'), untilMs: at('2027-02-01T00:00:00Z') },
    ];
    for (const query of queries) {
      for (const format of FORMATS) {
        const fromPg = await collect(exportPgLedger(pg.pool, query, format));
        expect(fromPg, `${format} ${JSON.stringify(query)}`).toBe(await collect(exportLedger(file.path, query, format)));
      }
    }
    // Not two empty files: every row, with its odd text read back intact.
    const ndjson = (await collect(exportPgLedger(pg.pool, whole, 'ndjson')))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(ndjson.map((row) => row.request_id)).toEqual(times.map((_, i) => `exp-${String(i).padStart(3, '0')}`));
    expect(ndjson[2]).toMatchObject({ model: ODD_MODELS[2], end_user: ODD_USERS[2], key_name: 'alpha', tenant_name: 'acme' });
    expect(ndjson[3]).toMatchObject({ model: 'модель-ü-🦊', stream: false, price_known: true, tags: null });
    expect(ndjson[6]).toMatchObject({ status: 'pending', completed_at: null, cost_usd: null, est_cost_usd: '0.001006' });
    const csv = parseCsv(await collect(exportPgLedger(pg.pool, { ...whole, tenantId: alpha.tenantId! }, 'csv')));
    expect(csv.length).toBe(1 + times.filter((_, i) => i % 3 !== 0).length);
  });

  /** The same `rows` rows inserted into both stores directly (the writer and shipper are not what this measures): `perMs` rows per millisecond. */
  async function fillBoth(rows: number, perMs: number): Promise<{ keyId: string; ids: string[] }> {
    const key = (await new PgKeyStore(pg.pool).createKey({ name: 'bulk', policy: { limits: [] } })).view;
    await new KeySync(pg.pool, file.database, { url: pg.url }).pull();
    const start = at('2026-11-02T00:00:00Z');
    const ids: string[] = [];
    await pg.pool.query(
      `INSERT INTO ledger (request_id, key_id, created_at, completed_at, endpoint, model, stream, status, http_status, cost_micros, prompt_tokens, completion_tokens)
       SELECT 'bulk-' || lpad(i::text, 6, '0'), $1, $2::bigint + i / $3, $2::bigint + i / $3 + 10, 'chat', 'gpt-4o-mini', i % 2 = 0, 'ok', 200, i, 10, 20
       FROM generate_series(0, $4 - 1) AS i`,
      [key.id, start, perMs, rows],
    );
    const insert = file.database.sqlite.prepare(
      `INSERT INTO ledger (request_id, key_id, created_at, completed_at, endpoint, model, stream, status, http_status, cost_micros, prompt_tokens, completion_tokens,
         est_prompt_tokens, est_completion_tokens, est_cost_micros, price_known)
       VALUES (?, ?, ?, ?, 'chat', 'gpt-4o-mini', ?, 'ok', 200, ?, 10, 20, 0, 0, 0, 1)`,
    );
    file.database.sqlite.transaction(() => {
      for (let i = 0; i < rows; i += 1) {
        const id = `bulk-${String(i).padStart(6, '0')}`;
        ids.push(id);
        const createdAt = start + Math.floor(i / perMs);
        insert.run(id, key.id, createdAt, createdAt + 10, i % 2 === 0 ? 1 : 0, i);
      }
    })();
    return { keyId: key.id, ids };
  }

  it('exports more rows than a page, complete and in order, ties across page boundaries included', async () => {
    // Seven rows a millisecond: the 1,000-row pages end inside a millisecond.
    const { keyId, ids } = await fillBoth(5_000, 7);
    const day = { sinceMs: at('2026-11-02T00:00:00Z'), untilMs: at('2026-11-03T00:00:00Z') };
    for (const query of [day, { ...day, keyId }]) {
      const ndjson = await collect(exportPgLedger(pg.pool, query, 'ndjson'));
      expect(
        ndjson
          .trimEnd()
          .split('\n')
          .map((line) => (JSON.parse(line) as { request_id: string }).request_id),
      ).toEqual(ids);
      expect(ndjson).toBe(await collect(exportLedger(file.path, query, 'ndjson')));
    }
    const csv = await collect(exportPgLedger(pg.pool, day, 'csv'));
    expect(csv).toBe(await collect(exportLedger(file.path, day, 'csv')));
  });

  it('reads the next page only when asked, and holds no connection between pages or after the consumer stops', async () => {
    await fillBoth(2_500, 1);
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
