/**
 * The hard cap across hosts: four proxy processes with their own database
 * files share one Redis, and the budget mix of the single-process test, spread
 * over all four, still spends at most the budget — capped, not refused.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { copyFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { BUDGET_MICRO_USD, ledgerTotals, runBudgetMix, upstreamBill } from '../../support/budget-run.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
let redis: RedisHandle;
let key: string;
const { path: first } = tempDatabasePath();
const paths = [first, ...[2, 3, 4].map((n) => join(dirname(first), `host-${n}.db`))];
let nodes: Array<TollgateProcess & { url: string }> = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-cap' });
  redis = await startRedis();
  const setup = openDatabase(first);
  key = new KeyStore(setup).createKey({ name: 'reasoner', policy: { limits: [], budget: { microUsd: BUDGET_MICRO_USD, period: 'day' } } }).key;
  setup.close();
  for (const path of paths.slice(1)) copyFileSync(first, path);
  nodes = await Promise.all(
    paths.map((db) => spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-cap', TOLLGATE_DB: db, TOLLGATE_REDIS_URL: redis.url })),
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

it('holds one $0.05 budget over four processes sharing Redis, capping rather than refusing', async () => {
  const result = await runBudgetMix(
    nodes.map((node) => `${node.url}/v1`),
    key,
  );
  await fake.settled();
  await waitFor(() => ledgerTotals(paths).pending === 0, 'every admitted request to settle on every node', 10_000);
  const ledger = ledgerTotals(paths);
  const bill = upstreamBill(fake);
  expect(ledger.cost).toBeLessThanOrEqual(BUDGET_MICRO_USD);
  expect(bill).toBeLessThanOrEqual(BUDGET_MICRO_USD);
  expect(ledger.cost).toBe(bill);
  expect(result.capped.length).toBeGreaterThanOrEqual(1);
  expect(ledger.cost).toBeGreaterThan(BUDGET_MICRO_USD * 0.9);
  expect(result.admitted + result.refused).toBe(12);
}, 60_000);
