/** The ledger writer on a real SQLite file: durability before forwarding, batching, exactly-once, rollups. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { Completion, LedgerWriter, PendingEntry } from '../../../src/storage/ledger.js';
import { calendarDay } from '../../../src/domain/calendar.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { holdWriteLock, openTempDatabase, type TempDatabase } from '../../support/db.js';
import { expectLongerRollupsEqualRows } from './rollup-checks.js';
import { waitFor } from '../../support/wait.js';

const opened: TempDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.remove();
});

function setup(): { db: TempDatabase; keyId: string; writer: LedgerWriter; commits: number[] } {
  const db = openTempDatabase();
  opened.push(db);
  const keyId = new KeyStore(db.database).createKey({ name: 'w', policy: { limits: [] } }).view.id;
  const commits: number[] = [];
  const writer = new SqliteLedgerWriter(db.database, {
    onCommit: (stats) => commits.push(stats.rows),
    onBusy: () => busyCounts.set(db, busyCount(db) + 1),
  });
  return { db, keyId, writer, commits };
}

/** Busy attempts seen by writers of this database (see setup's onBusy). */
const busyCounts = new WeakMap<TempDatabase, number>();
function busyCount(db: TempDatabase): number {
  return busyCounts.get(db) ?? 0;
}

/** A request's ledger status, or undefined while its row is not committed. */
function statusOf(db: TempDatabase, id: string): unknown {
  return (db.database.sqlite.prepare('SELECT status FROM ledger WHERE request_id = ?').get(id) as { status: string } | undefined)?.status;
}

const T0 = Date.parse('2026-11-21T10:00:00Z');

function pending(keyId: string, id: string, overrides: Partial<PendingEntry> = {}): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    createdAt: T0,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    estPromptTokens: 100,
    estCompletionTokens: 1000,
    estCostMicros: 615,
    priceKnown: true,
    ...overrides,
  };
}

function completion(id: string, overrides: Partial<Completion> = {}): Completion {
  return {
    requestId: id,
    completedAt: T0 + 500,
    status: 'ok',
    httpStatus: 200,
    promptTokens: 90,
    cachedTokens: 0,
    completionTokens: 20,
    reasoningTokens: 0,
    costMicros: 26,
    usageSource: 'reported',
    latencyMs: 500,
    ttftMs: null,
    upstreamRequestId: 'up-1',
    errorCode: null,
    ...overrides,
  };
}

describe('LedgerWriter', () => {
  it('resolves begin only once the pending row is visible to another connection', async () => {
    const { db, keyId, writer } = setup();
    await writer.begin(pending(keyId, 'req-a'));
    const other = new Database(db.path, { readonly: true });
    const row = other.prepare('SELECT status, est_cost_micros FROM ledger WHERE request_id = ?').get('req-a');
    other.close();
    expect(row).toEqual({ status: 'pending', est_cost_micros: 615 });
  });

  it('commits everything that arrives in one event-loop turn in one transaction', async () => {
    const { keyId, writer, commits } = setup();
    await Promise.all(Array.from({ length: 500 }, (_, i) => writer.begin(pending(keyId, `req-${i}`))));
    expect(commits).toEqual([500]);
  });

  it('commits a settlement with the next pending row, and on its own when no pending row comes', async () => {
    const { db, keyId, writer, commits } = setup();
    await writer.begin(pending(keyId, 'req-1'));
    writer.complete(completion('req-1'));
    await writer.begin(pending(keyId, 'req-2'));
    expect(statusOf(db, 'req-1')).toBe('ok');
    expect(commits).toEqual([1, 2]);
    writer.complete(completion('req-2'));
    await waitFor(() => statusOf(db, 'req-2') === 'ok', 'the lone settlement to commit');
    expect(commits).toEqual([1, 2, 1]);
  });

  it('under load lets a pending row wait up to the group window for the rows around it; one client at a time never waits', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    try {
      const { db, keyId, writer, commits } = setup();
      const committed = (id: string): boolean => statusOf(db, id) !== undefined;
      const begun = new Set<string>();
      const begin = (id: string): void => void writer.begin(pending(keyId, id)).then(() => begun.add(id));
      // Fewer than four in flight: each pending row commits on the next turn, however close together they come.
      for (const id of ['req-1', 'req-2', 'req-3', 'req-4']) {
        begin(id);
        await vi.advanceTimersByTimeAsync(0);
        expect(begun.has(id)).toBe(true);
        await vi.advanceTimersByTimeAsync(1);
      }
      expect(commits).toEqual([1, 1, 1, 1]);
      // Four in flight and the last pending row 1 ms ago: the next waits the 2 ms window, and the one after shares its commit.
      begin('req-5');
      await vi.advanceTimersByTimeAsync(1);
      expect(committed('req-5')).toBe(false);
      begin('req-6');
      await vi.advanceTimersByTimeAsync(0);
      expect(committed('req-5')).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect([committed('req-5'), committed('req-6'), begun.has('req-5'), begun.has('req-6')]).toEqual([true, true, true, true]);
      expect(commits).toEqual([1, 1, 1, 1, 2]);
      // A quiet spell: the next pending row commits on the next turn again.
      await vi.advanceTimersByTimeAsync(10);
      begin('req-7');
      await vi.advanceTimersByTimeAsync(0);
      expect(begun.has('req-7')).toBe(true);
      expect(commits).toEqual([1, 1, 1, 1, 2, 1]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('commits a pending row waiting for its group at once on close', async () => {
    const { db, keyId } = setup();
    const commits: number[] = [];
    const writer = new SqliteLedgerWriter(db.database, { groupWindowMs: 60_000, onCommit: (stats) => commits.push(stats.rows) });
    for (let i = 1; i <= 4; i += 1) await writer.begin(pending(keyId, `req-${i}`));
    const grouped = writer.begin(pending(keyId, 'req-5'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(statusOf(db, 'req-5')).toBeUndefined();
    expect(writer.close()).toBe(true);
    expect(statusOf(db, 'req-5')).toBe('pending');
    await grouped;
    expect(commits).toEqual([1, 1, 1, 1, 1]);
  });

  it('settles a request exactly once; a second completion changes nothing', async () => {
    const { db, keyId, writer } = setup();
    await writer.begin(pending(keyId, 'req-once'));
    writer.complete(completion('req-once'));
    writer.flush();
    writer.complete(completion('req-once', { costMicros: 999_999, promptTokens: 5 }));
    writer.flush();
    const row = db.database.sqlite.prepare('SELECT status, cost_micros, prompt_tokens FROM ledger WHERE request_id = ?').get('req-once');
    expect(row).toEqual({ status: 'ok', cost_micros: 26, prompt_tokens: 90 });
    const rollup = db.database.sqlite.prepare('SELECT requests, cost_micros, prompt_tokens, completion_tokens FROM rollups_daily WHERE key_id = ?').get(keyId);
    expect(rollup).toEqual({ requests: 1, cost_micros: 26, prompt_tokens: 90, completion_tokens: 20 });
  });

  it('writes every value of a pending row and its settlement into its own column', async () => {
    const { db, keyId, writer } = setup();
    const tenantId = new KeyStore(db.database).createTenant('columns').id;
    // Every number differs from every other, so two columns swapped would show.
    await writer.begin(
      pending(keyId, 'req-columns', {
        tenantId,
        endpoint: 'responses',
        model: 'gpt-4.1',
        stream: true,
        estPromptTokens: 101,
        estCompletionTokens: 102,
        estCostMicros: 103,
        priceKnown: false,
        endUser: 'user-7',
        tags: ['blue'],
        session: 'session-9',
      }),
    );
    writer.complete(
      completion('req-columns', {
        status: 'upstream_interrupted',
        httpStatus: 299,
        completedAt: T0 + 201,
        promptTokens: 202,
        cachedTokens: 203,
        completionTokens: 204,
        reasoningTokens: 205,
        audioPromptTokens: 206,
        audioCompletionTokens: 207,
        cacheWrite5mTokens: 208,
        cacheWrite1hTokens: 209,
        serviceTier: 'flex',
        toolCostMicros: 210,
        costMicros: 211,
        usageSource: 'counted',
        latencyMs: 212,
        ttftMs: 213,
        upstreamRequestId: 'up-columns',
        errorCode: 'stream_cut',
        upstream: 'east',
        attempts: 214,
        billedAttempts: 215,
      }),
    );
    expect(writer.flush()).toBe(true);
    const row = db.database.sqlite.prepare('SELECT * FROM ledger WHERE request_id = ?').get('req-columns');
    expect(row).toMatchObject({
      request_id: 'req-columns',
      key_id: keyId,
      tenant_id: tenantId,
      created_at: T0,
      endpoint: 'responses',
      model: 'gpt-4.1',
      stream: 1,
      est_prompt_tokens: 101,
      est_completion_tokens: 102,
      est_cost_micros: 103,
      price_known: 0,
      end_user: 'user-7',
      tags: expect.stringContaining('blue'),
      session: 'session-9',
      rollup_folded: null,
      rollup_exact: null,
      status: 'upstream_interrupted',
      http_status: 299,
      completed_at: T0 + 201,
      prompt_tokens: 202,
      cached_tokens: 203,
      completion_tokens: 204,
      reasoning_tokens: 205,
      audio_prompt_tokens: 206,
      audio_completion_tokens: 207,
      cache_write_5m_tokens: 208,
      cache_write_1h_tokens: 209,
      service_tier: 'flex',
      tool_cost_micros: 210,
      cost_micros: 211,
      usage_source: 'counted',
      latency_ms: 212,
      ttft_ms: 213,
      upstream_request_id: 'up-columns',
      error_code: 'stream_cut',
      upstream: 'east',
      attempts: 214,
      billed_attempts: 215,
    });
  });

  it('counts rejections in the rollups without counting them as served requests', async () => {
    const { db, keyId, writer } = setup();
    for (const [id, reason] of [
      ['r1', 'rate_limit'],
      ['r2', 'rate_limit'],
      ['r3', 'budget'],
    ] as const) {
      writer.reject({
        requestId: id,
        keyId,
        tenantId: null,
        createdAt: T0,
        endpoint: 'chat',
        model: 'gpt-4o',
        stream: false,
        status: 'rejected',
        httpStatus: 429,
        errorCode: 'x',
        reason,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: 5,
      });
    }
    writer.flush();
    const daily = db.database.sqlite.prepare('SELECT requests, rejected_rate_limit, rejected_budget, cost_micros FROM rollups_daily').get();
    expect(daily).toEqual({ requests: 0, rejected_rate_limit: 2, rejected_budget: 1, cost_micros: 0 });
    const hourly = db.database.sqlite.prepare('SELECT rejected_rate_limit, rejected_budget FROM rollups_hourly').get();
    expect(hourly).toEqual({ rejected_rate_limit: 2, rejected_budget: 1 });
    for (const table of ['rollups_monthly', 'rollups_daily_total', 'rollups_lifetime']) {
      const row = db.database.sqlite.prepare(`SELECT requests, rejected_rate_limit, rejected_budget, cost_micros FROM ${table}`).get();
      expect(row, table).toEqual({ requests: 0, rejected_rate_limit: 2, rejected_budget: 1, cost_micros: 0 });
    }
  });

  it('keeps the rollups equal to the ledger rows (estimate while pending, actual once settled) after any sequence', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            est: fc.nat({ max: 50_000 }),
            actual: fc.nat({ max: 50_000 }),
            settle: fc.boolean(),
            hour: fc.nat({ max: 50 }),
            // Days back and forth across month ends (T0 is 2026-11-21), and two keys.
            days: fc.integer({ min: -25, max: 12 }),
            second: fc.boolean(),
            model: fc.constantFrom('gpt-4o', 'gpt-4o-mini', 'o4-mini'),
            prompt: fc.nat({ max: 5000 }),
            completionTokens: fc.nat({ max: 5000 }),
          }),
          { maxLength: 40 },
        ),
        async (requests) => {
          const { db, keyId, writer } = setup();
          const otherKey = new KeyStore(db.database).createKey({ name: 'w2', policy: { limits: [] } }).view.id;
          await Promise.all(
            requests.map((r, i) =>
              writer.begin(
                pending(r.second ? otherKey : keyId, `p-${i}`, {
                  createdAt: T0 + r.days * 86_400_000 + r.hour * 3_600_000,
                  model: r.model,
                  estCostMicros: r.est,
                  estPromptTokens: r.prompt + 7,
                  estCompletionTokens: 4096,
                }),
              ),
            ),
          );
          requests.forEach((r, i) => {
            if (r.settle) writer.complete(completion(`p-${i}`, { costMicros: r.actual, promptTokens: r.prompt, completionTokens: r.completionTokens }));
          });
          writer.flush();
          const sql = db.database.sqlite;
          const fromRows = sql
            .prepare(
              `SELECT coalesce(sum(CASE WHEN status = 'pending' THEN est_cost_micros ELSE cost_micros END), 0) AS cost,
              coalesce(sum(CASE WHEN status = 'pending' THEN est_prompt_tokens ELSE prompt_tokens END), 0) AS prompt,
              count(*) AS requests FROM ledger`,
            )
            .get() as { cost: number; prompt: number; requests: number };
          const daily = sql
            .prepare(
              'SELECT coalesce(sum(cost_micros), 0) AS cost, coalesce(sum(prompt_tokens), 0) AS prompt, coalesce(sum(requests), 0) AS requests FROM rollups_daily',
            )
            .get();
          const hourly = sql
            .prepare(
              'SELECT coalesce(sum(cost_micros), 0) AS cost, coalesce(sum(prompt_tokens), 0) AS prompt, coalesce(sum(requests), 0) AS requests FROM rollups_hourly',
            )
            .get();
          expect(daily).toEqual(fromRows);
          expect(hourly).toEqual(fromRows);
          // per day and model too
          const perDay = sql
            .prepare(
              `SELECT day, model, sum(cost) AS cost FROM (SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, model,
              CASE WHEN status = 'pending' THEN est_cost_micros ELSE cost_micros END AS cost FROM ledger) GROUP BY day, model ORDER BY day, model`,
            )
            .all();
          const rolled = sql.prepare('SELECT day, model, sum(cost_micros) AS cost FROM rollups_daily GROUP BY day, model ORDER BY day, model').all();
          expect(rolled).toEqual(perDay);
          expectLongerRollupsEqualRows(sql);
          writer.close();
          db.remove();
          opened.pop();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('keeps begins waiting while another connection holds the write lock, and commits them once it is free', async () => {
    const { db, keyId, writer } = setup();
    await writer.begin(pending(keyId, 'before-lock'));
    const locker = new Database(db.path);
    locker.exec('BEGIN IMMEDIATE');
    writer.complete(completion('before-lock'));
    let settled: 'resolved' | 'rejected' | undefined;
    const during = writer.begin(pending(keyId, 'during-lock')).then(
      () => (settled = 'resolved'),
      () => (settled = 'rejected'),
    );
    // Several busy attempts go by (each gives up at once and is tried again on a timer) and the request still waits.
    await waitFor(() => busyCount(db) >= 3, 'three busy commit attempts');
    expect(settled).toBeUndefined();
    locker.exec('COMMIT');
    locker.close();
    await during;
    expect(settled).toBe('resolved');
    expect(writer.flush()).toBe(true);
    const rows = db.database.sqlite.prepare('SELECT request_id, status FROM ledger ORDER BY request_id').all();
    expect(rows).toEqual([
      { request_id: 'before-lock', status: 'ok' },
      { request_id: 'during-lock', status: 'pending' },
    ]);
  });

  it('never sleeps on a locked file, on a connection of its own: the shared connection keeps its busy timeout', async () => {
    const db = openTempDatabase();
    opened.push(db);
    // Key administration on the shared connection waits up to a minute for the lock …
    db.database.sqlite.pragma('busy_timeout = 60000');
    const keyId = new KeyStore(db.database).createKey({ name: 'w', policy: { limits: [] } }).view.id;
    let busy = 0;
    const writer = new SqliteLedgerWriter(db.database, { onBusy: () => (busy += 1) });
    await writer.begin(pending(keyId, 'first'));
    const locker = new Database(db.path);
    locker.exec('BEGIN IMMEDIATE');
    const during = writer.begin(pending(keyId, 'during-lock'));
    // … while each commit attempt gives up at once (SQLite's busy handler would sleep on the event loop) and
    // is tried again on a timer: a minute-long wait would never see three.
    await waitFor(() => busy >= 3, 'three busy commit attempts');
    expect(db.database.sqlite.pragma('busy_timeout', { simple: true })).toBe(60000);
    expect(db.database.ledgerConnection()).not.toBe(db.database.sqlite);
    expect(db.database.ledgerConnection().pragma('busy_timeout', { simple: true })).toBe(0);
    locker.exec('COMMIT');
    locker.close();
    await during;
    // The shared connection sees what the writer's committed, and still waits a minute for the lock.
    expect(db.database.sqlite.prepare('SELECT count(*) AS n FROM ledger').get()).toEqual({ n: 2 });
    expect(db.database.sqlite.pragma('busy_timeout', { simple: true })).toBe(60000);
  });

  it('waits for the lock at close: the last settlements are written even while another process holds it', async () => {
    const { db, keyId, writer } = setup();
    await writer.begin(pending(keyId, 'last'));
    // A WAL restart, or another process's commit, holds the lock as the proxy shuts down.
    const lock = await holdWriteLock(db.path, 300);
    writer.complete(completion('last'));
    expect(writer.close()).toBe(true);
    expect(statusOf(db, 'last')).toBe('ok');
    await lock.released;
  });

  it('writes an in-memory database on its one connection', async () => {
    const database = openDatabase(':memory:');
    try {
      const keyId = new KeyStore(database).createKey({ name: 'w', policy: { limits: [] } }).view.id;
      const writer = new SqliteLedgerWriter(database);
      expect(database.ledgerConnection()).toBe(database.sqlite);
      await writer.begin(pending(keyId, 'in-memory'));
      writer.complete(completion('in-memory'));
      expect(writer.flush()).toBe(true);
      expect(database.sqlite.prepare('SELECT request_id, status, cost_micros FROM ledger').all()).toEqual([
        { request_id: 'in-memory', status: 'ok', cost_micros: 26 },
      ]);
    } finally {
      database.close();
    }
  });

  it('refuses a begin that has waited longer than maxLockWaitMs for the lock', async () => {
    const db = openTempDatabase();
    opened.push(db);
    const keyId = new KeyStore(db.database).createKey({ name: 'w', policy: { limits: [] } }).view.id;
    const errors: unknown[] = [];
    const writer = new SqliteLedgerWriter(db.database, { maxLockWaitMs: 0, onError: (error) => errors.push(error) });
    const locker = new Database(db.path);
    locker.exec('BEGIN IMMEDIATE');
    await expect(writer.begin(pending(keyId, 'during-lock'))).rejects.toThrow(/locked|busy/i);
    locker.exec('COMMIT');
    locker.close();
    expect(errors).toHaveLength(1);
    expect(writer.flush()).toBe(true);
    expect(db.database.sqlite.prepare('SELECT count(*) AS n FROM ledger').get()).toEqual({ n: 0 });
  });

  it('refuses begins at once when the commit fails for another reason than a lock', async () => {
    const { db, keyId, writer } = setup();
    await writer.begin(pending(keyId, 'first'));
    // The same request id twice violates the primary key: not a lock, nothing to wait for.
    await expect(writer.begin(pending(keyId, 'first'))).rejects.toThrow(/UNIQUE/);
    expect(db.database.sqlite.prepare('SELECT count(*) AS n FROM ledger').get()).toEqual({ n: 1 });
  });

  it('writes refusals as compact raw rows within a per-key allowance and counts every one in the rollups', () => {
    const db = openTempDatabase();
    opened.push(db);
    const keyId = new KeyStore(db.database).createKey({ name: 'w', policy: { limits: [] } }).view.id;
    const writer = new SqliteLedgerWriter(db.database, { refusalRowsPerMinute: 10, refusalRollupModel: (model) => (model === 'gpt-4o' ? model : '(other)') });
    for (let i = 0; i < 1000; i += 1) {
      writer.reject({
        requestId: `refused-${i}`,
        keyId,
        tenantId: null,
        // All within one second: the allowance does not refill meanwhile.
        createdAt: T0 + i,
        endpoint: 'chat',
        model: i === 0 ? 'gpt-4o' : `m${i}-${'x'.repeat(250)}`,
        stream: false,
        status: 'rejected',
        httpStatus: 403,
        errorCode: 'model_not_allowed',
        reason: 'other',
        estPromptTokens: 0,
        estCompletionTokens: 0,
        estCostMicros: 0,
      });
    }
    expect(writer.flush()).toBe(true);
    const sql = db.database.sqlite;
    expect(sql.prepare('SELECT count(*) AS n, max(length(model)) AS longest FROM ledger').get()).toEqual({ n: 10, longest: 64 });
    expect(sql.prepare('SELECT model, errors FROM rollups_daily ORDER BY model').all()).toEqual([
      { model: '(other)', errors: 999 },
      { model: 'gpt-4o', errors: 1 },
    ]);
    // A minute later the key may file raw rows again.
    writer.reject({
      requestId: 'later',
      keyId,
      tenantId: null,
      createdAt: T0 + 61_000,
      endpoint: 'chat',
      model: 'gpt-4o',
      stream: false,
      status: 'invalid_request',
      httpStatus: 400,
      errorCode: 'invalid_value',
      reason: 'other',
      estPromptTokens: 0,
      estCompletionTokens: 0,
      estCostMicros: 0,
    });
    expect(writer.flush()).toBe(true);
    expect(sql.prepare("SELECT count(*) AS n FROM ledger WHERE request_id = 'later'").get()).toEqual({ n: 1 });
  });

  it('files a request under the UTC day it was made', () => {
    expect(calendarDay(Date.parse('2026-11-21T23:59:59.999Z'))).toBe('2026-11-21');
    expect(calendarDay(Date.parse('2026-11-22T00:00:00Z'))).toBe('2026-11-22');
  });
});
