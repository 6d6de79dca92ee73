/**
 * The ledger outbox on real SQLite and PostgreSQL: rows and settlements
 * written by the writer reach PostgreSQL with the same rollups as SQLite's,
 * and shipping anything twice changes nothing.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { KeySync } from '../../../src/storage/postgres/key-sync.js';
import { pruneLedger, retentionHorizon } from '../../../src/storage/postgres/retention.js';
import { disableOutbox, enableOutbox } from '../../../src/storage/sqlite/outbox.js';
import { LedgerShipper } from '../../../src/storage/postgres/shipper.js';
import { shipRows } from '../../../src/storage/postgres/ship-rows.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { Completion, PendingEntry } from '../../../src/storage/ledger.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

let pg: TempPostgres;
let local: TempDatabase;

beforeEach(async () => {
  pg = await createTempPostgres();
  local = openTempDatabase();
});
afterEach(async () => {
  local.remove();
  await pg.drop();
});

const T0 = Date.parse('2026-11-21T23:59:59Z');

function pending(keyId: string, id: string, i: number): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    // Across a day boundary and two hours.
    createdAt: T0 + i * 50,
    endpoint: 'chat',
    model: i % 2 === 0 ? 'gpt-4o-mini' : 'gpt-4o',
    stream: i % 3 === 0,
    estPromptTokens: 100 + i,
    estCompletionTokens: 1000,
    estCostMicros: 615 + i,
    priceKnown: true,
    // End users and tags (src/endusers) on some rows: their own rollups ship with the others.
    ...(i % 3 === 0 ? {} : { endUser: `user-${i % 4}` }),
    ...(i % 2 === 0 ? {} : { tags: i % 4 === 1 ? ['search'] : ['search', 'nightly'] }),
  };
}

function completion(id: string, i: number): Completion {
  return {
    requestId: id,
    completedAt: T0 + i * 50 + 10,
    status: i % 5 === 0 ? 'upstream_error' : 'ok',
    httpStatus: i % 5 === 0 ? 500 : 200,
    promptTokens: 90 + i,
    cachedTokens: i % 4,
    completionTokens: 20 + i,
    reasoningTokens: i % 3,
    // The priced dimensions (drizzle/0007), on some rows only, as the upstream reports them.
    ...(i % 2 === 1 ? { audioPromptTokens: 5 + i, audioCompletionTokens: i, serviceTier: i % 4 === 1 ? 'priority' : 'flex', toolCostMicros: 10_000 + i } : {}),
    // Cache writes (drizzle/0016), as Anthropic reports them.
    ...(i % 3 === 1 ? { cacheWrite5mTokens: 10 + i, cacheWrite1hTokens: i % 2 } : {}),
    costMicros: 26 + i * 7 + (i % 2 === 1 ? 10_000 + i : 0),
    // Routing (drizzle/0010): which upstream answered after how many tries.
    ...(i % 3 === 0 ? {} : { upstream: i % 3 === 1 ? 'primary' : 'azure', attempts: 1 + (i % 3), billedAttempts: i % 6 === 2 ? 1 : 0 }),
    usageSource: 'reported',
    latencyMs: 10,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: null,
  };
}

const TABLES: Record<string, string> = {
  rollups_daily: 'key_id, day, model',
  rollups_hourly: 'key_id, hour',
  rollups_monthly: 'month, key_id, model',
  rollups_daily_total: 'day',
  rollups_lifetime: 'key_id',
  rollups_end_users: 'key_id, end_user, day',
  rollups_tags: 'key_id, tag, day',
};

async function expectSameRollups(): Promise<void> {
  for (const [table, order] of Object.entries(TABLES)) {
    const want = local.database.sqlite.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all();
    const got = (await pg.pool.query(`SELECT * FROM ${table} ORDER BY ${order}`)).rows;
    expect(got, table).toEqual(want);
  }
}

async function setUpKey(): Promise<string> {
  const issued = await new PgKeyStore(pg.pool).createKey({ name: 'shipped', tenant: 'acme', policy: { limits: [] } });
  await new KeySync(pg.pool, local.database, { url: pg.url }).pull();
  return issued.view.id;
}

it('ships pending rows, settlements and refusals with rollups equal to SQLite’s, across a day boundary', async () => {
  const keyId = await setUpKey();
  const shipper = new LedgerShipper(pg.pool, local.database, { batch: 7 });
  const writer = new SqliteLedgerWriter(local.database);
  const ids = Array.from({ length: 40 }, (_, i) => `req-${i}`);
  await Promise.all(ids.map((id, i) => writer.begin(pending(keyId, id, i))));
  // Half the pending rows reach PostgreSQL before they settle.
  for (let n = 0; n < 3; n += 1) await shipper.shipOnce();
  ids.slice(0, 30).forEach((id, i) => writer.complete(completion(id, i)));
  for (const [i, code] of ['rate_limit_exceeded', 'insufficient_quota', 'invalid_json'].entries()) {
    writer.reject({
      requestId: `rej-${i}`,
      keyId,
      tenantId: null,
      createdAt: T0 + i,
      endpoint: 'chat',
      model: 'gpt-4o',
      stream: false,
      status: i === 2 ? 'invalid_request' : 'rejected',
      httpStatus: i === 2 ? 400 : 429,
      errorCode: code,
      reason: i === 0 ? 'rate_limit' : i === 1 ? 'budget' : 'other',
      estPromptTokens: 0,
      estCompletionTokens: 0,
      estCostMicros: 0,
      endUser: 'user-1',
      tags: ['search'],
    });
  }
  expect(writer.flush()).toBe(true);
  expect(shipper.depth()).toBeGreaterThan(0);
  await shipper.drain();
  expect(shipper.depth()).toBe(0);
  await expectSameRollups();
  // Not vacuous: the rows spread over end users and tags on both days.
  expect((await pg.pool.query('SELECT DISTINCT day FROM rollups_tags')).rows).toHaveLength(2);
  expect((await pg.pool.query<{ n: number }>('SELECT count(DISTINCT end_user)::bigint AS n FROM rollups_end_users')).rows[0]!.n).toBe(4);
  const rows = await pg.pool.query<{ n: number }>('SELECT count(*)::bigint AS n FROM ledger');
  expect(rows.rows[0]!.n).toBe(43);
  // Every row as SQLite holds it, priced dimensions included, whether it reached PostgreSQL pending or settled.
  const columns =
    'request_id, status, cost_micros, audio_prompt_tokens, audio_completion_tokens, cache_write_5m_tokens, cache_write_1h_tokens, service_tier, tool_cost_micros, end_user, tags, upstream, attempts, billed_attempts';
  const settledLocally = local.database.sqlite.prepare(`SELECT ${columns} FROM ledger ORDER BY request_id`).all();
  expect(settledLocally.filter((row) => (row as { service_tier: string | null }).service_tier === 'priority').length).toBeGreaterThan(2);
  expect(settledLocally.filter((row) => (row as { attempts: number | null }).attempts === 2).length).toBeGreaterThan(2);
  expect(settledLocally.filter((row) => Number((row as { cache_write_5m_tokens: number | null }).cache_write_5m_tokens) > 0).length).toBeGreaterThan(2);
  expect((await pg.pool.query(`SELECT ${columns} FROM ledger ORDER BY request_id`)).rows).toEqual(settledLocally);
});

it('counts a row once however often, and in whatever order, its states are shipped', async () => {
  const keyId = await setUpKey();
  const writer = new SqliteLedgerWriter(local.database);
  const shipper = new LedgerShipper(pg.pool, local.database);
  await Promise.all([0, 1, 2, 3].map((i) => writer.begin(pending(keyId, `r${i}`, i))));
  const pendingStates = local.database.sqlite.prepare(`SELECT 0 AS seq, * FROM ledger ORDER BY request_id`).all() as Parameters<typeof shipRows>[1];
  [0, 1, 2].forEach((i) => writer.complete(completion(`r${i}`, i)));
  expect(writer.flush()).toBe(true);
  const finalStates = local.database.sqlite.prepare(`SELECT 0 AS seq, * FROM ledger ORDER BY request_id`).all() as Parameters<typeof shipRows>[1];

  expect(await shipRows(pg.pool, finalStates)).toMatchObject({ inserted: 4, settled: 0 });
  // The older pending states arrive late, twice: nothing changes.
  expect(await shipRows(pg.pool, pendingStates)).toMatchObject({ inserted: 0, settled: 0, changes: [] });
  expect(await shipRows(pg.pool, [...pendingStates, ...finalStates])).toMatchObject({ inserted: 0, settled: 0, changes: [] });
  // The outbox itself ships everything again (it queued the same changes): still nothing.
  await shipper.drain();
  await expectSameRollups();
  // A node that stops being a replica and becomes one again queues its whole ledger again.
  disableOutbox(local.database);
  enableOutbox(local.database);
  expect(shipper.depth()).toBe(4);
  await shipper.drain();
  await expectSameRollups();
});

it('keeps rows in the outbox while PostgreSQL refuses them, and ships them once it accepts', async () => {
  const keyId = await setUpKey();
  const writer = new SqliteLedgerWriter(local.database);
  const shipper = new LedgerShipper(pg.pool, local.database);
  await writer.begin(pending(keyId, 'a', 1));
  // A broken server as far as this batch can tell: its ledger table is gone for a moment.
  await pg.pool.query('ALTER TABLE ledger RENAME TO ledger_away');
  await expect(shipper.shipOnce()).rejects.toThrow();
  expect(shipper.depth()).toBe(1);
  await pg.pool.query('ALTER TABLE ledger_away RENAME TO ledger');
  await shipper.drain();
  expect(shipper.depth()).toBe(0);
  await expectSameRollups();
});

it('prunes raw rows older than the retention, keeps the rollups and pending rows, and never ships a pruned row again', async () => {
  const keyId = await setUpKey();
  const writer = new SqliteLedgerWriter(local.database);
  const shipper = new LedgerShipper(pg.pool, local.database);
  await Promise.all([0, 1, 2].map((i) => writer.begin(pending(keyId, `old${i}`, i))));
  [0, 1].forEach((i) => writer.complete(completion(`old${i}`, i)));
  expect(writer.flush()).toBe(true);
  await shipper.drain();
  const rollups = async () => (await pg.pool.query('SELECT * FROM rollups_lifetime')).rows;
  const before = await rollups();
  // 30 days after T0, keeping 7: every settled row goes, the pending one stays.
  const now = T0 + 30 * 86_400_000;
  expect(retentionHorizon(7, now)).toBeGreaterThan(T0 + 86_400_000);
  expect(await pruneLedger(pg.pool, 7, now)).toBe(2);
  expect((await pg.pool.query('SELECT request_id FROM ledger')).rows).toEqual([{ request_id: 'old2' }]);
  expect(await rollups()).toEqual(before);
  // The node queues its whole ledger again (as after leaving and rejoining): nothing older than the horizon counts twice.
  disableOutbox(local.database);
  enableOutbox(local.database);
  await shipper.drain();
  expect(await rollups()).toEqual(before);
  expect(await pruneLedger(pg.pool, 7, now)).toBe(0);
});

it('ships who owns each stored response, and its deletion, which a stale copy shipped later never undoes', async () => {
  const keyId = await setUpKey();
  const sqlite = local.database.sqlite;
  const remember = sqlite.prepare('INSERT INTO responses (id, key_id, request_id, created_at) VALUES (?, ?, ?, ?)');
  // Remembered before the node became a replica: queued when it becomes one.
  disableOutbox(local.database);
  remember.run('resp_old', keyId, 'req_old', T0);
  const shipper = new LedgerShipper(pg.pool, local.database);
  remember.run('resp_new', keyId, 'req_new', T0 + 1);
  expect(shipper.depth()).toBe(2);
  await shipper.drain();
  expect(shipper.depth()).toBe(0);
  const shared = async () =>
    (await pg.pool.query('SELECT id, key_id, request_id, created_at, deleted_at IS NOT NULL AS deleted FROM responses ORDER BY id')).rows;
  expect(await shared()).toEqual([
    { id: 'resp_new', key_id: keyId, request_id: 'req_new', created_at: T0 + 1, deleted: false },
    { id: 'resp_old', key_id: keyId, request_id: 'req_old', created_at: T0, deleted: false },
  ]);
  sqlite.prepare('UPDATE responses SET deleted_at = ? WHERE id = ?').run(T0 + 5, 'resp_new');
  await shipper.drain();
  // A copy that never saw the deletion (another node's), shipped after it, and everything shipped twice: still deleted.
  sqlite.prepare('UPDATE responses SET deleted_at = NULL WHERE id = ?').run('resp_new');
  disableOutbox(local.database);
  enableOutbox(local.database);
  expect(shipper.depth()).toBe(2);
  await shipper.drain();
  expect((await shared()).map((row) => [row.id, row.deleted])).toEqual([
    ['resp_new', true],
    ['resp_old', false],
  ]);
});
