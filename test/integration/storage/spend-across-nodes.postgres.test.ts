/**
 * Budgets across replicas without Redis: a node's view of a key's spend is
 * PostgreSQL's rollups (every node's shipped rows) plus its own unshipped
 * rows — its own spend counted once whether shipped or not, another node's
 * once shipped and read.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { PostgresSpendSource } from '../../../src/storage/postgres/spend-source.js';
import { SpendTracker } from '../../../src/budgets/spend-tracker.js';
import { calendarDay } from '../../../src/domain/calendar.js';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { KeySync } from '../../../src/storage/postgres/key-sync.js';
import { LedgerShipper } from '../../../src/storage/postgres/shipper.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { PendingEntry } from '../../../src/storage/ledger.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';

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

const NOW = Date.parse('2026-11-22T12:00:00Z');

function node(file: TempDatabase, clock: { now: number }) {
  const source = new PostgresSpendSource(pg.pool, file.database, { refreshMs: 100, now: () => clock.now });
  const tracker = new SpendTracker(file.database, { refreshMs: 100, source });
  const writer = new SqliteLedgerWriter(file.database, { spend: tracker });
  const shipper = new LedgerShipper(pg.pool, file.database, { onShipped: (result) => source.shippedBatch(result.changes) });
  return { source, tracker, writer, shipper };
}

function entry(keyId: string, id: string, estCostMicros: number): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    createdAt: NOW,
    endpoint: 'chat',
    model: 'gpt-4o',
    stream: false,
    estPromptTokens: 10,
    estCompletionTokens: 10,
    estCostMicros,
    priceKnown: true,
  };
}

it('counts every node’s shipped spend and this node’s unshipped spend, each once', async () => {
  const keyId = (await new PgKeyStore(pg.pool).createKey({ name: 'shared', policy: { limits: [] } })).view.id;
  for (const file of files) await new KeySync(pg.pool, file.database, { url: pg.url }).pull();
  const clock = { now: NOW };
  const a = node(files[0]!, clock);
  const b = node(files[1]!, clock);
  const scope = { level: 'key' as const, id: keyId };
  const day = calendarDay(NOW);
  const seen = (n: ReturnType<typeof node>, period: 'day' | 'month' | 'total' = 'day') => n.tracker.spent(scope, period, clock.now);
  const settle = (n: ReturnType<typeof node>, id: string, costMicros: number) =>
    n.writer.complete({
      requestId: id,
      completedAt: NOW,
      status: 'ok',
      httpStatus: 200,
      promptTokens: 10,
      cachedTokens: 0,
      completionTokens: 5,
      reasoningTokens: 0,
      costMicros,
      usageSource: 'reported',
      latencyMs: 1,
      ttftMs: null,
      upstreamRequestId: null,
      errorCode: null,
    });
  /** Moves the clock past the refresh interval until node `n` sees `expected`. */
  const expectSeen = async (n: ReturnType<typeof node>, expected: number, period: 'day' | 'month' | 'total' = 'day') => {
    await waitFor(
      () => {
        clock.now += 100;
        return seen(n, period) === expected;
      },
      `${expected} micro-USD seen (last: ${seen(n, period)})`,
    );
  };

  await a.writer.begin(entry(keyId, 'a1', 1000));
  await b.writer.begin(entry(keyId, 'b1', 5000));
  // Nothing shipped: each node knows only its own.
  await expectSeen(a, 1000);
  await expectSeen(b, 5000);
  // B ships: A sees it once read.
  await b.shipper.drain();
  await expectSeen(a, 6000);
  await expectSeen(b, 5000);
  // A ships: its own spend moves from "unshipped" to PostgreSQL, counted once throughout; B sees it once read.
  await a.shipper.drain();
  expect(seen(a)).toBe(6000);
  await expectSeen(a, 6000);
  await expectSeen(b, 6000);
  // A settles below the estimate; before and after shipping the settlement, the same.
  settle(a, 'a1', 400);
  expect(a.writer.flush()).toBe(true);
  await expectSeen(a, 5400);
  await a.shipper.drain();
  await expectSeen(a, 5400);
  await expectSeen(a, 5400, 'month');
  await expectSeen(a, 5400, 'total');
  expect(day).toBe('2026-11-22');
});

it('counts an end user’s and a tag’s spend over every node: shipped once, unshipped once, and exactly for a seed', async () => {
  const keyId = (await new PgKeyStore(pg.pool).createKey({ name: 'shared', policy: { limits: [] } })).view.id;
  for (const file of files) await new KeySync(pg.pool, file.database, { url: pg.url }).pull();
  const clock = { now: NOW };
  const a = node(files[0]!, clock);
  const b = node(files[1]!, clock);
  const ann = { level: 'user' as const, id: `${keyId}:ann`, keyId, name: 'ann' };
  const nightly = { level: 'tag' as const, id: `${keyId}:nightly`, keyId, name: 'nightly' };
  const attributed = (id: string, cost: number, endUser: string, tags: string[]) => ({ ...entry(keyId, id, cost), endUser, tags });
  const expectSeen = async (n: ReturnType<typeof node>, scope: typeof ann | typeof nightly, expected: number, period: 'day' | 'total' = 'day') => {
    await waitFor(
      () => {
        clock.now += 100;
        return n.tracker.spent(scope, period, clock.now) === expected;
      },
      `${expected} micro-USD seen for ${scope.id} (last: ${n.tracker.spent(scope, period, clock.now)})`,
    );
  };

  await a.writer.begin(attributed('a1', 1000, 'ann', ['nightly']));
  // Another user's and another tag's (named like a prefix of ours) spend counts for neither.
  await a.writer.begin(attributed('a2', 300, 'anna', ['nightly-x', 'search']));
  await b.writer.begin(attributed('b1', 5000, 'ann', ['search', 'nightly']));
  await expectSeen(a, ann, 1000);
  await expectSeen(b, nightly, 5000);
  expect(await a.source.exact(ann, 'day', clock.now)).toBe(1000);
  await b.shipper.drain();
  await expectSeen(a, ann, 6000);
  await expectSeen(a, nightly, 6000);
  expect(await a.source.exact(ann, 'day', clock.now)).toBe(6000);
  await a.shipper.drain();
  await expectSeen(b, ann, 6000);
  await expectSeen(b, nightly, 6000, 'total');
  expect(await b.source.exact(nightly, 'total', clock.now)).toBe(6000);
  // PostgreSQL's rollups hold them whole, per key·name·day.
  const users = await pg.pool.query<{ end_user: string; cost_micros: number }>('SELECT end_user, cost_micros FROM rollups_end_users ORDER BY end_user');
  expect(users.rows).toEqual([
    { end_user: 'ann', cost_micros: 6000 },
    { end_user: 'anna', cost_micros: 300 },
  ]);
});
