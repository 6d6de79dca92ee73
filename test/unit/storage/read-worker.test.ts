/**
 * The dashboard's and the reports' reads on the worker thread answer exactly
 * what the same reads answer on the event loop; a report's 400 crosses the
 * thread as the same error; reads past the queue's bound are refused with 503;
 * a worker that died is replaced on the next read.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ReadWorker, WorkerDashboardReads } from '../../../src/storage/sqlite/read-worker.js';
import { SqliteDashboardReads } from '../../../src/storage/sqlite/dashboard-reads.js';
import { TollgateError } from '../../../src/domain/errors.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { querySpend, workerSpendReads } from '../../../src/storage/sqlite/spend-reads.js';
import { SPEND_GROUPINGS, type SpendQuery } from '../../../src/storage/spend-reads.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let db: TempDatabase;
let worker: ReadWorker;
let keyId: string;
let tenantId: string;

beforeAll(async () => {
  db = openTempDatabase();
  const store = new KeyStore(db.database);
  keyId = store.createKey({ name: 'worked', tenant: 'acme', policy: { limits: [] } }).view.id;
  tenantId = store.getTenant('acme').id;
  const writer = new SqliteLedgerWriter(db.database);
  await Promise.all(
    Array.from({ length: 120 }, (_, i) =>
      writer.begin({
        requestId: `w-${i}`,
        keyId,
        tenantId,
        createdAt: NOW - i * 3_600_000,
        endpoint: 'chat',
        model: i % 2 === 0 ? 'gpt-4o' : 'gpt-4o-mini',
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: 100 + i,
        priceKnown: true,
        endUser: `user-${i % 7}`,
        tags: [`tag-${i % 5}`],
      }),
    ),
  );
  for (let i = 0; i < 60; i += 1) {
    writer.complete({
      requestId: `w-${i}`,
      completedAt: NOW,
      status: i % 9 === 0 ? 'upstream_error' : 'ok',
      httpStatus: i % 9 === 0 ? 429 : 200,
      promptTokens: 9,
      cachedTokens: 0,
      completionTokens: 5,
      reasoningTokens: 0,
      costMicros: 50 + i,
      usageSource: 'reported',
      latencyMs: 10,
      ttftMs: null,
      upstreamRequestId: null,
      errorCode: null,
    });
  }
  expect(writer.close()).toBe(true);
  worker = new ReadWorker(db.path);
});
afterAll(async () => {
  await worker.close();
  db.remove();
});

it('answers every dashboard read exactly as the reads on the event loop do', async () => {
  const here = new SqliteDashboardReads(db.database);
  const there = new WorkerDashboardReads(db.database, worker);
  const since = '2026-11-01';
  const calls: Array<[string, (reads: SqliteDashboardReads | WorkerDashboardReads) => Promise<unknown>]> = [
    ['directory', (r) => r.directory()],
    ['spendByKey', (r) => r.spendByKey(NOW)],
    ['keyLifetimeCost', (r) => r.keyLifetimeCost(keyId, NOW)],
    ['dailySeries', (r) => r.dailySeries(NOW)],
    ['keyDailySeries', (r) => r.keyDailySeries(keyId, NOW)],
    ['hourlySeries', (r) => r.hourlySeries(NOW)],
    ['hourlySeries of a key', (r) => r.hourlySeries(NOW, keyId)],
    ['keyTotals', (r) => r.keyTotals(keyId, since, NOW)],
    ['tenantTotals', (r) => r.tenantTotals(tenantId, since, NOW)],
    ['tenantDailySeries', (r) => r.tenantDailySeries(tenantId, NOW)],
    ['tenantHourlySeries', (r) => r.tenantHourlySeries(tenantId, NOW)],
    ['keyModels', (r) => r.keyModels(keyId, since, NOW)],
    ['keyTop', (r) => r.keyTop(keyId, 'user', since, NOW, 3)],
    ['latestRequests', (r) => r.latestRequests(keyId, 10)],
    ['recent429s', (r) => r.recent429s(keyId, 10)],
  ];
  for (const [name, call] of calls) expect(await call(there), name).toEqual(await call(here));
  const spend = (query: SpendQuery, now: number) => workerSpendReads(worker).spend(query, now);
  for (const by of SPEND_GROUPINGS) {
    const query = { since, by, limit: 4 };
    expect(await spend(query, NOW), by).toEqual(querySpend(db.database, query, NOW));
  }
});

it('carries a report’s 400 across the thread as the same error', async () => {
  const error = await workerSpendReads(worker)
    .spend({ since: '2026-11-01', by: 'tag', limit: 2, cursor: 'not-a-cursor' }, NOW)
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TollgateError);
  expect((error as TollgateError).status).toBe(400);
  expect((error as TollgateError).param).toBe('cursor');
});

it('refuses reads beyond its queue with 503 reports_busy, and answers the others', async () => {
  const small = new ReadWorker(db.path, { maxQueued: 3 });
  try {
    const reads = new WorkerDashboardReads(db.database, small);
    const settled = await Promise.allSettled(Array.from({ length: 6 }, () => reads.spendByKey(NOW)));
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(3);
    const refused = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => s.reason as TollgateError);
    expect(refused.map((e) => [e.code, e.status])).toEqual([
      ['reports_busy', 503],
      ['reports_busy', 503],
      ['reports_busy', 503],
    ]);
    expect(small.queued).toBe(0);
  } finally {
    await small.close();
  }
});

it('starts a new worker on the next read after one died', async () => {
  const reads = new WorkerDashboardReads(db.database, worker);
  const before = await reads.keyTotals(keyId, '2026-11-01', NOW);
  // The running thread is killed from outside: reads in flight fail, the next one is answered again.
  const thread = (worker as unknown as { worker: { terminate(): Promise<number> } | undefined }).worker;
  expect(thread).toBeDefined();
  await thread!.terminate();
  expect(await reads.keyTotals(keyId, '2026-11-01', NOW)).toEqual(before);
});
