/**
 * Agent sessions on replicas: two proxy processes with their own SQLite
 * files share one PostgreSQL and one Redis; the clients send the agents'
 * session headers over both nodes. A per-session budget holds each session
 * to it under concurrent requests over both nodes (other sessions
 * untouched), the rows reach PostgreSQL with their session, and `tollgate
 * spend --by session` against PostgreSQL equals what the fake upstream
 * billed per session.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/prices.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { spawnServe, spawnTollgate, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

type Node = TollgateProcess & { url: string };

/** µUSD per session: three 60-token gpt-4o-mini answers fit, a fourth does not. */
const BUDGET = 120;
const CLAUDE = 'a1b2c3d4-0000-4111-8222-333344445555';
const CODEX = '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

let pg: TempPostgres;
let redis: RedisHandle;
let fake: FakeUpstream;
const dbs = [tempDatabasePath().path, tempDatabasePath().path];
const nodes: Node[] = [];

beforeAll(async () => {
  pg = await createTempPostgres();
  redis = await startRedis();
  fake = await startFakeUpstream({ apiKey: 'sk-pg-sessions' });
  for (const db of dbs) {
    nodes.push(
      await spawnServe({
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: 'sk-pg-sessions',
        TOLLGATE_DB: db,
        TOLLGATE_REDIS_URL: redis.url,
        TOLLGATE_DATABASE_URL: pg.url,
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  for (const node of nodes) {
    node.child.kill('SIGTERM');
    await node.exited;
  }
  await redis?.stop();
  await fake?.close();
  await pg?.drop();
  for (const db of dbs) rmSync(dirname(db), { recursive: true, force: true });
});

async function tollgate(...args: string[]): Promise<string> {
  const proc = spawnTollgate(args, { TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_DB: '/nonexistent/never-opened.db' });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`tollgate ${args.join(' ')} exited ${String(code)}: ${proc.stderr.join('\n')}`);
  return proc.stdout.join('\n');
}

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return '200';
  } catch (error) {
    if (error instanceof OpenAI.APIError && error.status !== undefined) return `${error.status} ${String(error.code)}`;
    throw error;
  }
}

function ask(key: string, node: number, headers: Record<string, string>, maxTokens = 60): Promise<string> {
  const client = new OpenAI({ baseURL: `${nodes[node]!.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-fake-scenario': 'words=1000', ...headers } });
  return outcome(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens }));
}

async function waitShipped(): Promise<void> {
  await fake.settled();
  await waitFor(
    async () => {
      const texts = await Promise.all(nodes.map((node) => fetch(`${node.url}/metrics`).then((res) => res.text())));
      return texts.every((text) => /^tollgate_outbox_depth 0$/m.test(text));
    },
    'both nodes to ship their outboxes',
    15_000,
  );
}

/** What the fake upstream billed per session header it received (the agents' headers reach it unchanged). */
function billedBySession(): Map<string, number> {
  const out = new Map<string, number>();
  for (const record of fake.requests) {
    const headers = record.headers;
    const session = (headers['x-claude-code-session-id'] ?? headers['session-id'] ?? headers['x-tollgate-session']) as string | undefined;
    if (session === undefined) continue;
    const body = record.body as { model: string };
    out.set(session, (out.get(session) ?? 0) + costMicroUsd(record.billed, resolvePrice(body.model, builtinPriceTable)));
  }
  return out;
}

it("holds each session's budget over two replica nodes under concurrent requests, and reports by session from PostgreSQL as billed", async () => {
  const { key } = JSON.parse(await tollgate('keys', 'create', '--name', 'agents', '--session-budget-usd', '0.00012', '--json')) as { key: string };
  await waitFor(
    async () => (await Promise.all(nodes.map((_, i) => ask(key, i, {}, 1)))).every((status) => status === '200'),
    'both nodes to serve the key',
    10_000,
  );
  const sessions: Array<[string, Record<string, string>]> = [
    [CLAUDE, { 'x-claude-code-session-id': CLAUDE }],
    [CODEX, { 'session-id': CODEX, originator: 'codex_exec' }],
  ];
  const statuses = await Promise.all(sessions.flatMap(([, headers]) => Array.from({ length: 20 }, (_, i) => ask(key, i % 2, headers))));
  for (const i of [0, 1]) {
    const mine = statuses.slice(i * 20, i * 20 + 20);
    expect(mine.filter((status) => status === '200').length).toBeGreaterThan(0);
    expect(mine.filter((status) => status === '200').length).toBeLessThanOrEqual(3);
    expect(mine).toContain('429 insufficient_quota');
  }
  await waitShipped();
  const rows = (
    await pg.pool.query<{ session: string; n: string; spent: string }>(
      `SELECT session, count(*) AS n, sum(coalesce(cost_micros, est_cost_micros)) AS spent FROM ledger WHERE session IS NOT NULL GROUP BY session`,
    )
  ).rows;
  expect(new Map(rows.map((row) => [row.session, Number(row.n)]))).toEqual(new Map([CLAUDE, CODEX].map((session) => [session, 20])));
  for (const row of rows) expect(Number(row.spent)).toBeLessThanOrEqual(BUDGET);

  const bill = billedBySession();
  const report = JSON.parse(await tollgate('spend', '--key', 'agents', '--since', 'today', '--by', 'session', '--json')) as {
    rows: Array<{ group: string; costMicros: number; key: string }>;
    pending: number;
  };
  expect(report.pending).toBe(0);
  expect(new Map(report.rows.map((row) => [row.group, row.costMicros]))).toEqual(bill);
  for (const [, spent] of bill) expect(spent).toBeLessThanOrEqual(BUDGET);
  expect(report.rows.every((row) => row.key === 'agents')).toBe(true);
  // A new session still has its whole budget.
  expect(await ask(key, 1, { 'x-tollgate-session': 'fresh-run' })).toBe('200');
}, 90_000);
