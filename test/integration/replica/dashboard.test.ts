/**
 * The dashboard on replicas (TOLLGATE_DATABASE_URL): it reads PostgreSQL, so
 * every node shows the spend made on every node.
 *
 * - The reads: PostgreSQL's views equal SQLite's over the same rows (the
 *   contract, test/integration/storage/dashboard-reads.contract.test.ts);
 *   here, what only a cluster shows.
 * - Two nodes writing: each node's own file holds its share; the dashboard of
 *   either node shows both.
 * - Two whole nodes in-process (the composition root, the fake upstream):
 *   traffic through both, then the overview JSON, the pages a person reads,
 *   a key's request list and the spend CSV of either node, all equal to
 *   `tollgate spend` on PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { calendarDay } from '../../../src/domain/calendar.js';
import { loadConfig } from '../../../src/config/index.js';
import { buildKeyPage } from '../../../src/dashboard/key-view.js';
import { buildKeys } from '../../../src/dashboard/keys-page.js';
import { parseKeysQuery } from '../../../src/dashboard/keys-query.js';
import { buildOverview } from '../../../src/dashboard/overview.js';
import { PostgresDashboardReads } from '../../../src/storage/postgres/dashboard-reads.js';
import { SqliteDashboardReads } from '../../../src/storage/sqlite/dashboard-reads.js';
import type { DashboardReads } from '../../../src/storage/dashboard-reads.js';
import type { KeyPageView, OverviewView } from '../../../src/dashboard/index.js';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { KeySync } from '../../../src/storage/postgres/key-sync.js';
import { LedgerShipper } from '../../../src/storage/postgres/shipper.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { Metrics } from '../../../src/metrics.js';
import { queryPgSpend } from '../../../src/storage/postgres/spend-reads.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { recordRequest } from '../../support/dashboard.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';

const at = (iso: string) => Date.parse(iso);
const NOW = at('2026-11-18T15:00:00Z');

/** Every view the dashboard builds at `now`, as the JSON endpoints return them. */
async function everyView(reads: DashboardReads, now: number, keyIds: readonly string[]): Promise<unknown> {
  const ctx = { reads, now };
  return JSON.parse(
    JSON.stringify({
      overview: await buildOverview(ctx),
      keysBySpend: await buildKeys(ctx, parseKeysQuery({}, true)),
      keysByName: await buildKeys(ctx, parseKeysQuery({ sort: 'name' }, true)),
      keysOfAcme: await buildKeys(ctx, parseKeysQuery({ tenant: 'acme', sort: 'last_used' }, true)),
      keys: await Promise.all(keyIds.map((id) => buildKeyPage(ctx, id))),
    }),
  ) as unknown;
}

describe('reads on PostgreSQL', () => {
  let pg: TempPostgres;
  let files: TempDatabase[];
  beforeEach(async () => {
    pg = await createTempPostgres();
    files = [openTempDatabase(), openTempDatabase()];
  });
  afterEach(async () => {
    for (const file of files) file.remove();
    await pg.drop();
  });

  /** A node: its own file with the cluster's keys, its writer and its shipper. */
  async function node(file: TempDatabase) {
    await new KeySync(pg.pool, file.database, { url: pg.url }).pull();
    return {
      writer: new SqliteLedgerWriter(file.database),
      shipper: new LedgerShipper(pg.pool, file.database),
      reads: new SqliteDashboardReads(file.database),
    };
  }

  async function createKeys() {
    const store = new PgKeyStore(pg.pool);
    const create = async (name: string, tenant: string | undefined, budget?: { microUsd: number; period: 'day' | 'week' | 'month' | 'total' }) =>
      (await store.createKey({ name, tenant, policy: { limits: [], ...(budget ? { budget } : {}) } })).view.id;
    // Upper and lower case: both stores list keys in the same order.
    return {
      alpha: await create('alpha', 'acme', { microUsd: 1_000, period: 'day' }),
      beta: await create('Beta', 'acme', { microUsd: 50_000, period: 'month' }),
      gamma: await create('gamma', undefined, { microUsd: 100_000, period: 'total' }),
      delta: await create('delta', 'zeta-co', { microUsd: 9_000, period: 'week' }),
    };
  }

  it('shows the spend of both nodes, where each node’s own file holds only its share', async () => {
    const keys = await createKeys();
    const [a, b] = [await node(files[0]!), await node(files[1]!)];
    await recordRequest(a.writer, { keyId: keys.alpha, createdAt: at('2026-11-18T09:00:00Z'), costMicros: 1_000 });
    await recordRequest(b.writer, { keyId: keys.alpha, createdAt: at('2026-11-18T10:00:00Z'), costMicros: 2_000 });
    await recordRequest(b.writer, { keyId: keys.beta, createdAt: at('2026-11-18T11:00:00Z'), costMicros: 30_000 });
    await a.shipper.drain();
    await b.shipper.drain();

    const cluster = (await everyView(new PostgresDashboardReads(pg.pool), NOW, [keys.alpha])) as { overview: OverviewView; keys: KeyPageView[] };
    expect(cluster.overview.totals.today.costMicros).toBe(33_000);
    expect(cluster.overview.topKeys.map((k) => [k.name, k.costMonthMicros])).toEqual([
      ['Beta', 30_000],
      ['alpha', 3_000],
    ]);
    expect(cluster.keys[0]!.latest.map((row) => row.costMicros)).toEqual([2_000, 1_000]);
    expect(cluster.keys[0]!.budget).toMatchObject({ spentMicros: 3_000, level: 'over' });
    // The same totals as `tollgate spend` on PostgreSQL.
    const cli = await queryPgSpend(pg.pool, { since: '2026-11-18', until: '2026-11-18', by: 'total' }, NOW);
    expect(cluster.overview.totals.today).toEqual({ ...cli.total, pending: cli.pending });
    // Each node's file alone would have shown a part.
    const mine = (await everyView(a.reads, NOW, [])) as { overview: OverviewView };
    expect(mine.overview.totals.today.costMicros).toBe(1_000);
    const theirs = (await everyView(b.reads, NOW, [])) as { overview: OverviewView };
    expect(theirs.overview.totals.today.costMicros).toBe(32_000);
  });

  it('answers 503 with a clear message, not a node’s partial view, while PostgreSQL is unreachable', async () => {
    const reads = new PostgresDashboardReads(pg.pool);
    await pg.pool.query('ALTER TABLE rollups_lifetime RENAME TO away');
    await expect(buildOverview({ reads, now: NOW })).rejects.toMatchObject({
      code: 'ledger_unavailable',
      message: expect.stringContaining('PostgreSQL') as unknown,
    });
    await pg.pool.query('ALTER TABLE away RENAME TO rollups_lifetime');
    await expect(buildOverview({ reads, now: NOW })).resolves.toMatchObject({ page: 'overview' });
  });
});

describe('two whole nodes', () => {
  const ADMIN_TOKEN = 'pg-dashboard-admin-token-0123456789';
  let pg: TempPostgres;
  let fake: FakeUpstream;
  let files: TempDatabase[];
  let nodes: Tollgate[];

  beforeAll(async () => {
    pg = await createTempPostgres();
    fake = await startFakeUpstream({ apiKey: 'sk-pg-dashboard' });
    files = [openTempDatabase(), openTempDatabase()];
    nodes = files.map((file) =>
      buildTollgate(
        loadConfig({
          TOLLGATE_DB: file.path,
          TOLLGATE_DATABASE_URL: pg.url,
          TOLLGATE_UPSTREAM_URL: fake.url,
          TOLLGATE_UPSTREAM_KEY: 'sk-pg-dashboard',
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

  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  async function createKey(tollgate: Tollgate, name: string): Promise<{ id: string; key: string }> {
    const response = await tollgate.app.request('/admin/api/keys', {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
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

  it('shows on either node’s dashboard, JSON, pages and CSV, the spend made on both', async () => {
    const north = await createKey(nodes[0]!, 'north-team');
    const south = await createKey(nodes[1]!, 'south-team');
    // Keys reach the other node through LISTEN/NOTIFY.
    await waitFor(
      () => nodes.every((tollgate) => tollgate.keyStore.authKeyById(north.id) !== undefined && tollgate.keyStore.authKeyById(south.id) !== undefined),
      'keys on both nodes',
    );
    const madeOnSouth = await chat(nodes[1]!, north.key, 'gpt-4o');
    await chat(nodes[0]!, north.key, 'gpt-4o-mini');
    await chat(nodes[1]!, south.key, 'gpt-4o-mini');
    await chat(nodes[1]!, south.key, 'gpt-4o-mini');
    await fake.settled();
    await waitFor(
      async () =>
        (await queryPgSpend(pg.pool, { since: '2000-01-01', by: 'total' })).total.requests === 4 && nodes.every((t) => t.replica!.shipper.depth() === 0),
      'every request shipped and settled',
      15_000,
    );
    // What `tollgate spend --by key` prints on PostgreSQL for today.
    const cli = await queryPgSpend(pg.pool, { since: calendarDay(Date.now()), by: 'key' });
    expect(cli.total.requests).toBe(4);

    for (const tollgate of nodes) {
      const overview = (await (await tollgate.app.request('/admin/api/dashboard/overview', { headers: admin })).json()) as OverviewView;
      expect(overview.totals.today).toEqual({ ...cli.total, pending: cli.pending });
      expect(overview.topKeys.map((k) => [k.name, k.costMonthMicros]).sort()).toEqual(cli.rows.map((row) => [row.group, row.costMicros]).sort());

      const keyPage = (await (await tollgate.app.request(`/admin/api/dashboard/keys/${north.id}`, { headers: admin })).json()) as KeyPageView;
      expect(keyPage.latest.map((row) => row.model).sort()).toEqual(['gpt-4o', 'gpt-4o-mini']);
      expect(keyPage.latest.map((row) => row.requestId)).toContain(madeOnSouth);

      // The pages a person reads, behind the login form.
      const login = await tollgate.app.request('/dashboard/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: ADMIN_TOKEN, next: '/dashboard' }).toString(),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const keysPage = await (await tollgate.app.request('/dashboard/keys', { headers: { cookie } })).text();
      expect(keysPage).toContain('north-team');
      expect(keysPage).toContain('south-team');
      expect(await (await tollgate.app.request('/dashboard', { headers: { cookie } })).text()).toContain(overview.text.spendToday);

      // The spend CSV the dashboard's admin API serves.
      const csv = await (await tollgate.app.request('/admin/api/spend.csv?by=key&since=today', { headers: admin })).text();
      expect(csv).toContain('north-team');
      expect(csv).toContain('south-team');
    }
    // Two whole nodes, eight page loads and shipping: generous for a loaded 2-core machine.
  }, 120_000);
});
