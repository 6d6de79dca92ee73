/**
 * Agent sessions' budgets and limits: a key created with the CLI's
 * `--session-budget-usd` and `--session-limit`, two proxy processes with
 * their own database files sharing one Redis, and clients sending the
 * session headers the agents send (Claude Code's, Codex's) or Tollgate's
 * own. Each session's budget holds over both nodes under concurrent
 * requests, every other session is untouched, and each session's limit is
 * one bucket over both nodes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { copyFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cli } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
let redis: RedisHandle;
let key: string;
const { path: first } = tempDatabasePath();
const paths = [first, join(dirname(first), 'host-2.db')];
let nodes: Array<TollgateProcess & { url: string }> = [];

/** µUSD per session over its whole run: a handful of 60-token gpt-4o-mini answers. */
const BUDGET = 120;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-sessions' });
  redis = await startRedis();
  const created = await cli(
    '--db',
    first,
    'keys',
    'create',
    '--name',
    'agents',
    '--session-budget-usd',
    '0.00012',
    '--session-limit',
    'requests:5/min',
    '--json',
  );
  expect(created.code).toBe(0);
  key = created.json<{ key: string }>().key;
  expect(created.json<{ policy: { session: unknown } }>().policy).toMatchObject({
    session: { limits: [{ unit: 'requests', amount: 5, period: 'min' }], budgets: [{ microUsd: BUDGET, period: 'total' }] },
  });
  copyFileSync(first, paths[1]!);
  nodes = await Promise.all(
    paths.map((db) => spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-sessions', TOLLGATE_DB: db, TOLLGATE_REDIS_URL: redis.url })),
  );
}, 60_000);

afterAll(async () => {
  for (const node of nodes) {
    node.child.kill('SIGTERM');
    await node.exited;
  }
  await redis.stop();
  await fake.close();
  rmSync(dirname(first), { recursive: true, force: true });
});

interface LedgerRow {
  session: string | null;
  status: string;
  cost: number;
}

function ledgerOf(path: string): LedgerRow[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT session, status, coalesce(cost_micros, est_cost_micros) AS cost FROM ledger').all() as LedgerRow[];
  } finally {
    db.close();
  }
}

const ledger = (): LedgerRow[] => paths.flatMap(ledgerOf);

async function settled(): Promise<LedgerRow[]> {
  await fake.settled();
  await waitFor(() => ledger().every((row) => row.status !== 'pending'), 'every request to settle on both nodes', 10_000);
  return ledger();
}

/** "200", or the status and code of the SDK's error ("429 insufficient_quota"). */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return '200';
  } catch (error) {
    if (error instanceof OpenAI.APIError && error.status !== undefined) return `${error.status} ${String(error.code)}`;
    throw error;
  }
}

function ask(node: number, headers: Record<string, string>, maxTokens = 60): Promise<string> {
  const client = new OpenAI({ baseURL: `${nodes[node]!.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-fake-scenario': 'words=1000', ...headers } });
  return outcome(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens }));
}

const CLAUDE = 'b2f0a6c1-3d4e-4f5a-9b8c-7d6e5f4a3b2c';
const CODEX = '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

it("holds each session's budget over two nodes sharing Redis under 20 concurrent requests per session, other sessions unaffected", async () => {
  // 60 completion tokens reserve about $0.000038: three fit the $0.00012 budget, a fourth does not (the limit would allow five).
  const sessions: Array<[string, Record<string, string>]> = [
    [CLAUDE, { 'x-claude-code-session-id': CLAUDE }],
    [CODEX, { 'session-id': CODEX, 'thread-id': 'thread-ignored', originator: 'codex_exec' }],
  ];
  const statuses = await Promise.all(sessions.flatMap(([, headers]) => Array.from({ length: 20 }, (_, i) => ask(i % 2, headers))));
  const rows = await settled();
  for (const [i, [session]] of sessions.entries()) {
    const mine = statuses.slice(i * 20, i * 20 + 20);
    const admitted = mine.filter((status) => status === '200').length;
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(3);
    expect(mine).toContain('429 insufficient_quota');
    const spent = rows.filter((row) => row.session === session).reduce((sum, row) => sum + row.cost, 0);
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(BUDGET);
    // Every request of the session was recorded under it, refusals included.
    expect(rows.filter((row) => row.session === session)).toHaveLength(20);
  }
  // A new session has a budget of its own; a request without a session has none.
  expect(await ask(1, { 'x-tollgate-session': 'fresh-run' })).toBe('200');
  expect(await ask(0, {})).toBe('200');
  // The budgets were Redis counters, one per session (lua/budget.lua), shared by both nodes.
  const client = new Redis(redis.url);
  try {
    const counters = await client.keys('tg:{session:*}:budget:*');
    expect(counters).toHaveLength(3);
    for (const name of counters) expect(Number(await client.get(name))).toBeLessThanOrEqual(BUDGET);
  } finally {
    client.disconnect();
  }
  await settled();
}, 60_000);

it("holds each session's limit as one bucket over both nodes, and refuses a bad x-tollgate-session naming it", async () => {
  const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => ask(i % 2, { 'x-tollgate-session': 'limited-run' }, 5)));
  const admitted = statuses.filter((status) => status === '200').length;
  // requests:5/min: the burst of 5 over both nodes, never more.
  expect(admitted).toBeGreaterThan(0);
  expect(admitted).toBeLessThanOrEqual(5);
  expect(statuses.filter((status) => status !== '200').every((status) => status === '429 rate_limit_exceeded')).toBe(true);
  expect(await ask(0, { 'x-tollgate-session': 'another-run' }, 5)).toBe('200');
  const response = await fetch(`${nodes[0]!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-tollgate-session': 'not ok' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
  });
  expect(response.status).toBe(400);
  expect(((await response.json()) as { error: { param: string } }).error.param).toBe('x-tollgate-session');
  await settled();
}, 60_000);
