/**
 * End users and tags on replicas (issue 13 × 16): two proxy processes with
 * their own SQLite files share one PostgreSQL and one Redis; the clients are
 * the real `openai` SDK naming end users (`user`) and tags (`metadata.tags`)
 * over both nodes. `tollgate spend --by user|tag` against PostgreSQL equals
 * what the fake upstream billed per user and tag; a per-end-user budget holds
 * over both nodes (its Redis counter seeded from PostgreSQL); the key page's
 * top end users and tags, served by a node, are PostgreSQL's.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import { Redis } from 'ioredis';
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

const ADMIN_TOKEN = 'pg-end-users-admin-token-0123456789';
/** µUSD a day per end user: a handful of gpt-4o-mini answers. */
const BUDGET = 120;

let pg: TempPostgres;
let redis: RedisHandle;
let fake: FakeUpstream;
const dbs = [tempDatabasePath().path, tempDatabasePath().path];
const nodes: Node[] = [];

beforeAll(async () => {
  pg = await createTempPostgres();
  redis = await startRedis();
  fake = await startFakeUpstream({ apiKey: 'sk-pg-users' });
  for (const db of dbs) {
    nodes.push(
      await spawnServe({
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: 'sk-pg-users',
        TOLLGATE_DB: db,
        TOLLGATE_REDIS_URL: redis.url,
        TOLLGATE_DATABASE_URL: pg.url,
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
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

/** `tollgate <args>` as its own process, on PostgreSQL (no local file). */
async function tollgate(...args: string[]): Promise<string> {
  const proc = spawnTollgate(args, { TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_DB: '/nonexistent/never-opened.db' });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`tollgate ${args.join(' ')} exited ${String(code)}: ${proc.stderr.join('\n')}`);
  return proc.stdout.join('\n');
}

/** Creates a key with the CLI and waits until both nodes serve it. */
async function createKey(name: string, ...options: string[]): Promise<{ key: string; id: string }> {
  const created = JSON.parse(await tollgate('keys', 'create', '--name', name, ...options, '--json')) as { key: string; id: string };
  const sdk = clients(created.key);
  await waitFor(
    async () => (await Promise.all(sdk.map((client) => outcome(ask(client, { user: 'warm-up', max_tokens: 1 }))))).every((status) => status === '200'),
    `both nodes to serve key ${name}`,
    10_000,
  );
  return created;
}

function clients(key: string): OpenAI[] {
  return nodes.map((node) => new OpenAI({ baseURL: `${node.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-fake-scenario': 'words=1000' } }));
}

function ask(client: OpenAI, options: { user?: string; tags?: string; max_tokens: number }) {
  return client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: options.max_tokens,
    ...(options.user === undefined ? {} : { user: options.user }),
    ...(options.tags === undefined ? {} : { metadata: { tags: options.tags } }),
  });
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

/** Both nodes' outboxes are empty: every row and rollup is in PostgreSQL. */
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

/** What the fake upstream billed per end user and per tag. */
function billed(records: FakeUpstream['requests']): { users: Map<string, number>; tags: Map<string, number>; total: number } {
  const users = new Map<string, number>();
  const tags = new Map<string, number>();
  let total = 0;
  for (const record of records) {
    const body = record.body as { model: string; user?: string; metadata?: { tags?: string } };
    const cost = costMicroUsd(record.billed, resolvePrice(body.model, builtinPriceTable));
    total += cost;
    const user = body.user ?? '(no end user)';
    users.set(user, (users.get(user) ?? 0) + cost);
    for (const tag of body.metadata?.tags?.split(',') ?? []) tags.set(tag, (tags.get(tag) ?? 0) + cost);
  }
  return { users, tags, total };
}

interface Report {
  rows: Array<{ group: string; key?: string; costMicros: number; requests: number }>;
  total: { costMicros: number };
  pending: number;
}

it('reports spend by end user and by tag from PostgreSQL equal to the fake upstream’s bill over both nodes', async () => {
  const { key } = await createKey('reports');
  const sdk = clients(key);
  const users = ['ana', 'ben', 'cy', undefined];
  const tagSets = ['search', 'search,nightly', undefined, 'nightly'];
  const statuses = await Promise.all(
    Array.from({ length: 24 }, (_, i) => outcome(ask(sdk[i % 2]!, { user: users[i % 4], tags: tagSets[Math.floor(i / 4) % 4], max_tokens: 20 + i }))),
  );
  expect(statuses.every((status) => status === '200')).toBe(true);
  await waitShipped();
  // Every request so far is this key's (its warm-ups too, as user `warm-up`).
  const bill = billed(fake.requests);
  const byUser = JSON.parse(await tollgate('spend', '--key', 'reports', '--since', 'today', '--by', 'user', '--json')) as Report;
  expect(byUser.pending).toBe(0);
  expect(new Map(byUser.rows.map((row) => [row.group, row.costMicros]))).toEqual(bill.users);
  expect(byUser.rows.filter((row) => row.group !== '(no end user)').every((row) => row.key === 'reports')).toBe(true);
  expect(byUser.rows.reduce((sum, row) => sum + row.costMicros, 0)).toBe(byUser.total.costMicros);
  expect(byUser.total.costMicros).toBe(bill.total);
  const byTag = JSON.parse(await tollgate('spend', '--key', 'reports', '--since', 'today', '--by', 'tag', '--json')) as Report;
  expect(new Map(byTag.rows.map((row) => [row.group, row.costMicros]))).toEqual(bill.tags);
  expect(byTag.rows.find((row) => row.group === 'search')?.requests).toBe(16);

  // The key page, served by either node, lists PostgreSQL's top end users and tags.
  const id = (JSON.parse(await tollgate('keys', 'show', 'reports', '--json')) as { id: string }).id;
  for (const node of nodes) {
    const page = (await (await fetch(`${node.url}/admin/api/dashboard/keys/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
      topUsers: Array<{ name: string; totals: { costMicros: number } }>;
      topTags: Array<{ name: string; totals: { costMicros: number } }>;
    };
    const named = [...bill.users].filter(([user]) => user !== '(no end user)');
    expect(new Map(page.topUsers.map((item) => [item.name, item.totals.costMicros]))).toEqual(new Map(named));
    expect(page.topUsers.map((item) => item.totals.costMicros)).toEqual([...page.topUsers.map((item) => item.totals.costMicros)].sort((a, b) => b - a));
    expect(new Map(page.topTags.map((item) => [item.name, item.totals.costMicros]))).toEqual(bill.tags);
  }
}, 60_000);

it('holds a per-end-user budget over both nodes, its counter seeded from PostgreSQL', async () => {
  const { key } = await createKey('budgeted', '--user-budget-usd', '0.00012', '--user-budget-period', 'day');
  const sdk = clients(key);
  // 60 completion tokens reserve about $0.000038: three fit the $0.00012 budget, a fourth does not.
  expect(await outcome(ask(sdk[0]!, { user: 'dora', max_tokens: 60 }))).toBe('200');
  await waitShipped();
  // Redis loses its counters (a restart without persistence): node 1, which never served dora, seeds hers
  // again — from PostgreSQL, which holds node 0's request; its own file alone would say she spent nothing.
  const client = new Redis(redis.url);
  try {
    await client.flushall();
  } finally {
    client.disconnect();
  }
  expect(await outcome(ask(sdk[1]!, { user: 'dora', max_tokens: 60 }))).toBe('200');
  const users = ['dora', 'eli'];
  const statuses = await Promise.all(users.flatMap((user) => Array.from({ length: 10 }, (_, i) => outcome(ask(sdk[i % 2]!, { user, max_tokens: 60 })))));
  await waitShipped();
  const report = JSON.parse(await tollgate('spend', '--key', 'budgeted', '--since', 'today', '--by', 'user', '--json')) as Report;
  for (const [i, user] of users.entries()) {
    const mine = statuses.slice(i * 10, i * 10 + 10);
    expect(mine).toContain('429 insufficient_quota');
    const spent = report.rows.find((row) => row.group === user)!.costMicros;
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(BUDGET);
  }
}, 60_000);
