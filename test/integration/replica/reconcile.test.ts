/**
 * `tollgate reconcile` on replicas (TOLLGATE_DATABASE_URL) reads the ledger
 * from PostgreSQL: every node's rows (src/reconcile/ledger-cells.ts).
 *
 * - The cells: PostgreSQL's equal SQLite's over the same rows (the contract,
 *   test/integration/storage/ledger-cells.contract.test.ts); PostgreSQL not
 *   answering is `ledger_unavailable`.
 * - End to end, as test/integration/reconcile/provider-bill.test.ts on one
 *   host: two whole nodes serve the traffic, the fake upstream's bill leaves
 *   a day out and adds a request Tollgate never sent, and the CLI on the
 *   replica config finds exactly those, counting both nodes' requests;
 *   PostgreSQL unreachable is a clear CLI error, not one node's share.
 * - The proxy's scheduled run (TOLLGATE_RECONCILE_EVERY) on both nodes at
 *   once: one node runs the interval, reading PostgreSQL's ledger (both
 *   nodes' requests), and stores one result where both nodes' dashboards and
 *   /metrics read it.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { Metrics } from '../../../src/metrics.js';
import { readLedgerCells } from '../../../src/reconcile/ledger-cells.js';
import { postgresLedgerCells } from '../../../src/storage/postgres/ledger-cells.js';
import type { ReconcileResult } from '../../../src/reconcile/run.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { cli } from '../../support/cli.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';

const at = (iso: string) => Date.parse(iso);

describe('the ledger cells on PostgreSQL', () => {
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

  it('fails with ledger_unavailable while PostgreSQL does not answer', async () => {
    await pg.pool.query('ALTER TABLE ledger RENAME TO away');
    await expect(readLedgerCells(postgresLedgerCells(pg.pool), { since: '2026-11-10', until: '2026-11-12' }, undefined)).rejects.toMatchObject({
      code: 'ledger_unavailable',
      message: expect.stringContaining('PostgreSQL') as unknown,
    });
    await pg.pool.query('ALTER TABLE away RENAME TO ledger');
  });
});

describe('tollgate reconcile on two whole nodes', () => {
  const UPSTREAM_KEY = 'sk-test-upstream-pg-reconcile-0123456789';
  const ADMIN_KEY = 'sk-admin-pg-reconcile-secret-9876543210';
  const ADMIN_TOKEN = 'pg-reconcile-admin-token-0123456789';
  const DAYS = ['2026-11-18', '2026-11-19'] as const;
  const clock = { now: at(`${DAYS[0]}T10:00:00Z`) };
  let pg: TempPostgres;
  let fake: FakeUpstream;
  let files: TempDatabase[];
  let results: TempDatabase;
  let nodes: Tollgate[];

  beforeAll(async () => {
    pg = await createTempPostgres();
    fake = await startFakeUpstream({
      apiKey: UPSTREAM_KEY,
      now: () => clock.now,
      billing: {
        adminKey: ADMIN_KEY,
        project: 'proj_tollgate',
        deviations: { dropDays: [DAYS[0]], extraRequests: [{ day: DAYS[1], model: 'gpt-4o-mini', inputTokens: 1000, outputTokens: 500 }] },
      },
    });
    files = [openTempDatabase(), openTempDatabase()];
    // Where the CLI stores its result (src/reconcile/store.ts): neither node's file.
    results = openTempDatabase();
    nodes = files.map((file) =>
      buildTollgate(
        loadConfig({
          TOLLGATE_DB: file.path,
          TOLLGATE_DATABASE_URL: pg.url,
          TOLLGATE_UPSTREAM_URL: fake.url,
          TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
          TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
          // Scheduled runs are started by hand below (the timer's fall on UTC midnights).
          TOLLGATE_RECONCILE_EVERY: '24h',
          TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY,
          TOLLGATE_PROVIDER_API_URL: fake.url,
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
  }, 60_000);

  afterAll(async () => {
    for (const tollgate of nodes ?? []) await tollgate.close();
    for (const file of [...(files ?? []), results]) file?.remove();
    await fake?.close();
    await pg?.drop();
  });

  async function createKey(tollgate: Tollgate, name: string): Promise<{ id: string; key: string }> {
    const response = await tollgate.app.request('/admin/api/keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as { key: string; id: string };
  }

  async function chat(tollgate: Tollgate, key: string, model: string): Promise<void> {
    const response = await tollgate.app.request('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'count the foxes' }] }),
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
  }

  /** `tollgate reconcile --json` in-process, on the replica config (TOLLGATE_DATABASE_URL) unless `--db` is given. */
  async function reconcile(options: { env?: Record<string, string>; db?: string } = {}) {
    const saved = { ...process.env };
    Object.assign(process.env, {
      TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY,
      TOLLGATE_PROVIDER_API_URL: fake.url,
      TOLLGATE_DB: results.path,
      TOLLGATE_CONFIG: '',
      TOLLGATE_DATABASE_URL: pg.url,
      ...options.env,
    });
    try {
      return await cli(...(options.db === undefined ? [] : ['--db', options.db]), 'reconcile', '--since', DAYS[0], '--until', DAYS[1], '--json');
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  }

  it('finds exactly the bill’s deliberate differences, counting the requests of both nodes', async () => {
    const north = await createKey(nodes[0]!, 'north-team');
    const south = await createKey(nodes[1]!, 'south-team');
    await waitFor(
      () => nodes.every((tollgate) => tollgate.keyStore.authKeyById(north.id) !== undefined && tollgate.keyStore.authKeyById(south.id) !== undefined),
      'keys on both nodes',
    );
    for (const [i, day] of DAYS.entries()) {
      clock.now = at(`${day}T${String(9 + i).padStart(2, '0')}:30:00Z`);
      await chat(nodes[0]!, north.key, 'gpt-4o-mini');
      await chat(nodes[1]!, south.key, 'gpt-4o-mini');
      await chat(nodes[1]!, north.key, 'gpt-4o-mini');
    }
    await fake.settled();
    await waitFor(
      async () =>
        (await pg.pool.query<{ n: number }>("SELECT count(*) AS n FROM ledger WHERE status <> 'pending'")).rows[0]!.n === 6 &&
        nodes.every((t) => t.replica!.shipper.depth() === 0),
      'every request shipped and settled',
      15_000,
    );

    const run = await reconcile();
    expect(run.code, run.stderr).toBe(0);
    const result = run.json<ReconcileResult>();
    expect(result.rows.map((row) => `${row.day} ${row.model}: ${row.status} ${row.ledger?.requests ?? '-'}/${row.provider?.requests ?? '-'}`)).toEqual([
      '2026-11-18 gpt-4o-mini: missing_at_provider 3/-',
      '2026-11-19 gpt-4o-mini: differs 3/4',
    ]);
    const extra = result.rows[1]!;
    expect(extra.provider!.inputTokens - extra.ledger!.inputTokens).toBe(1000);
    expect(extra.provider!.outputTokens - extra.ledger!.outputTokens).toBe(500);
    expect(result.pending).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(ADMIN_KEY);

    // With --db, one node's file: only its share, which the bill does not match.
    const one = (await reconcile({ db: files[0]!.path })).json<ReconcileResult>();
    expect(one.rows.map((row) => row.ledger?.requests)).toEqual([1, 1]);
  }, 60_000);

  it('runs a scheduled interval on one node only, over both nodes’ requests, stored for both', async () => {
    const storedBefore = (await pg.pool.query<{ n: number }>('SELECT count(*) AS n FROM reconciliations')).rows[0]!.n;
    const runs = await Promise.all(nodes.map((tollgate) => tollgate.reconciler!.runOnce()));
    expect(runs.map((run) => run.ran).sort()).toEqual([false, true]);
    const result = runs.find((run) => run.ran)!.results[0]!;
    expect(result.rows.map((row) => `${row.day} ${row.model}: ${row.status} ${row.ledger?.requests ?? '-'}/${row.provider?.requests ?? '-'}`)).toEqual([
      '2026-11-18 gpt-4o-mini: missing_at_provider 3/-',
      '2026-11-19 gpt-4o-mini: differs 3/4',
    ]);
    expect((await pg.pool.query<{ n: number }>('SELECT count(*) AS n FROM reconciliations')).rows[0]!.n).toBe(storedBefore + 1);
    for (const file of files) expect(file.database.sqlite.prepare('SELECT count(*) FROM reconciliations').pluck().get()).toBe(0);
    for (const tollgate of nodes) {
      const metrics = await (await tollgate.app.request('/metrics')).text();
      const drift = (result.totals.provider.costMicros - result.totals.ledger.costMicros) / 1e6;
      expect(metrics).toContain(`tollgate_reconcile_drift_usd{provider="openai"} ${drift}`);
    }
  }, 30_000);

  it('fails clearly while PostgreSQL does not answer', async () => {
    const down = await reconcile({ env: { TOLLGATE_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' } });
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr).toContain('PostgreSQL');
    expect(down.stderr).not.toContain(ADMIN_KEY);
  });
});
