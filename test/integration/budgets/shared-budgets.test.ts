/**
 * Budgets across hosts: two proxy processes with separate database files
 * (as on two machines) share one Redis, and one key's budget holds across
 * both — not once per node. A counter Redis lost is seeded from the ledger.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { copyFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
let redis: RedisHandle;
let admin: Redis;
const { path: dbA } = tempDatabasePath();
const dbB = join(dirname(dbA), 'host-b.db');
let key: string;
let keyId: string;
let nodes: Array<TollgateProcess & { url: string }> = [];

// gpt-4o with max_tokens 50 reserves 520 µUSD and settles at 140 µUSD (8 prompt, 12 completion tokens).
const BUDGET = 5_000;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-budget' });
  redis = await startRedis();
  admin = new Redis(redis.url);
  const setup = openDatabase(dbA);
  const issued = new KeyStore(setup).createKey({ name: 'shared-budget', policy: { limits: [], budget: { microUsd: BUDGET, period: 'day' } } });
  key = issued.key;
  keyId = issued.view.id;
  setup.close();
  copyFileSync(dbA, dbB); // the same key on the second "host", its own ledger from here on
  nodes = await Promise.all(
    [dbA, dbB].map((db) => spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-budget', TOLLGATE_DB: db, TOLLGATE_REDIS_URL: redis.url })),
  );
}, 60_000);

afterAll(async () => {
  for (const node of nodes) {
    node.child.kill('SIGTERM');
    await node.exited;
  }
  admin.disconnect();
  await redis.stop();
  await fake.close();
  rmSync(dirname(dbA), { recursive: true, force: true });
});

async function ask(node: { url: string }): Promise<{ status: number; code: string | undefined }> {
  const res = await fetch(`${node.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: body.error?.code };
}

function ledgerSpend(db: string): { admitted: number; cost: number } {
  const database = openDatabase(db);
  try {
    return database.sqlite.prepare("SELECT count(*) AS admitted, coalesce(sum(cost_micros), 0) AS cost FROM ledger WHERE status = 'ok'").get() as {
      admitted: number;
      cost: number;
    };
  } finally {
    database.close();
  }
}

it('holds one budget across nodes that do not share a database', async () => {
  let refused = 0;
  for (let i = 0; i < 120 && refused < 4; i += 1) {
    const answer = await ask(nodes[i % 2]!);
    if (answer.status === 429) {
      expect(answer.code).toBe('insufficient_quota');
      refused += 1;
    } else {
      expect(answer.status).toBe(200);
    }
  }
  expect(refused).toBe(4); // both nodes refuse now
  await waitFor(() => ledgerSpend(dbA).admitted + ledgerSpend(dbB).admitted > 0, 'ledgers to be written');
  const a = ledgerSpend(dbA);
  const b = ledgerSpend(dbB);
  // Shared: about 33 requests in all (each settles at 140 of the 5,000 and needs 520 free).
  // Once per node, it would have been about 33 on each.
  expect(a.admitted).toBeGreaterThan(5);
  expect(b.admitted).toBeGreaterThan(5);
  expect(a.admitted + b.admitted).toBeLessThanOrEqual(34);
  expect(a.admitted + b.admitted).toBeGreaterThanOrEqual(28);
  expect(a.cost + b.cost).toBeLessThanOrEqual(BUDGET);
  // Redis's counter equals what both ledgers billed (every settlement applied).
  const day = new Date().toISOString().slice(0, 10);
  await waitFor(async () => Number(await admin.get(`tg:{key:${keyId}}:budget:${day}`)) === a.cost + b.cost, 'the counter to settle');
});

it("seeds a counter Redis lost from the node's own ledger", async () => {
  await admin.flushall();
  const before = ledgerSpend(dbA).cost;
  const answer = await ask(nodes[0]!); // node A asks first: the counter starts at A's ledger
  expect(answer.status).toBe(200);
  const day = new Date().toISOString().slice(0, 10);
  await waitFor(async () => Number(await admin.get(`tg:{key:${keyId}}:budget:${day}`)) === before + 140, 'the seeded counter to settle');
});
