/**
 * End-user and tag budgets read the ledger exactly — between commits, through
 * a settlement, across periods — while the spend tracker's memory stays
 * bounded however many end users come and go.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SpendTracker, type AttributedScope } from '../../../src/budgets/spend-tracker.js';
import { checkBudgets, type BudgetCheck } from '../../../src/budgets/check.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { PendingEntry } from '../../../src/storage/ledger.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';

const opened: TempDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.remove();
});

const NOON = Date.parse('2026-11-21T12:00:00Z');
let sequence = 0;

function setup(maxReads?: number) {
  const db = openTempDatabase();
  opened.push(db);
  const key = new KeyStore(db.database).createKey({ name: 'app', policy: { limits: [] } }).view;
  const tracker = new SpendTracker(db.database, { refreshMs: 1000, ...(maxReads === undefined ? {} : { maxReads }) });
  const writer = new SqliteLedgerWriter(db.database, { spend: tracker });
  const entry = (cost: number, endUser: string | undefined, tags: string[] = [], at = NOON): PendingEntry => ({
    requestId: `eu-${(sequence += 1)}`,
    keyId: key.id,
    tenantId: null,
    createdAt: at,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    estPromptTokens: 10,
    estCompletionTokens: 10,
    estCostMicros: cost,
    priceKnown: true,
    endUser,
    tags,
  });
  const user = (name: string): AttributedScope => ({ level: 'user', id: `${key.id}:${name}`, keyId: key.id, name });
  const tag = (name: string): AttributedScope => ({ level: 'tag', id: `${key.id}:${name}`, keyId: key.id, name });
  return { db, key, tracker, writer, entry, user, tag };
}

describe('end-user and tag spend', () => {
  it('counts queued, committed and settled spend per user and per tag, each in its own period', async () => {
    const { db, tracker, writer, entry, user, tag } = setup();
    const first = entry(100, 'alice', ['search', 'web']);
    const pending = writer.begin(first);
    // Queued, not committed: already counted.
    expect(tracker.spent(user('alice'), 'day', NOON)).toBe(100);
    expect(tracker.spent(tag('search'), 'month', NOON)).toBe(100);
    expect(tracker.spent(user('bob'), 'day', NOON)).toBe(0);
    await pending;
    await writer.begin(entry(30, 'bob', ['web']));
    writer.complete({
      requestId: first.requestId,
      completedAt: NOON + 5,
      status: 'ok',
      httpStatus: 200,
      promptTokens: 10,
      cachedTokens: 0,
      completionTokens: 3,
      reasoningTokens: 0,
      costMicros: 40,
      usageSource: 'reported',
      latencyMs: 5,
      ttftMs: null,
      upstreamRequestId: null,
      errorCode: null,
    });
    expect(tracker.spent(user('alice'), 'day', NOON + 6)).toBe(40);
    expect(tracker.spent(tag('web'), 'total', NOON + 6)).toBe(70);
    writer.flush();
    // A fresh tracker reads the same from the rollups alone.
    const fresh = new SpendTracker(db.database);
    expect(fresh.spent(user('alice'), 'day', NOON + 7)).toBe(40);
    expect(fresh.spent(tag('web'), 'week', NOON + 7)).toBe(70);
    // The next day is a new period; the month and the total still hold it.
    const tomorrow = NOON + 86_400_000;
    expect(fresh.spent(user('alice'), 'day', tomorrow)).toBe(0);
    expect(fresh.spent(user('alice'), 'month', tomorrow)).toBe(40);
    expect(fresh.spent(user('alice'), 'total', tomorrow)).toBe(40);
  });

  it('refuses by a user budget with a label that names the user', async () => {
    const { tracker, writer, entry, user, key } = setup();
    await writer.begin(entry(90, 'alice'));
    const checks: BudgetCheck[] = [{ scope: user('alice'), label: `end user "alice" of key ${key.name}`, budget: { microUsd: 100, period: 'day' } }];
    const decision = checkBudgets(tracker, checks, 20, NOON);
    expect(decision.ok).toBe(false);
    expect(!decision.ok && decision.refusedBy.spentMicroUsd).toBe(90);
    expect(checkBudgets(tracker, [{ ...checks[0]!, scope: user('bob') }], 20, NOON).ok).toBe(true);
  });

  it('keeps at most maxReads reads however many end users it sees, and stays exact after dropping one', async () => {
    const { tracker, writer, entry, user } = setup(100);
    for (let i = 0; i < 5_000; i += 1) {
      void writer.begin(entry(1, `user-${i}`));
      expect(tracker.spent(user(`user-${i}`), 'day', NOON)).toBe(1);
    }
    writer.flush();
    expect(tracker.reads).toBeLessThanOrEqual(100);
    // user-0's read was dropped long ago: read again, it is still exact.
    expect(tracker.spent(user('user-0'), 'day', NOON)).toBe(1);
    expect(tracker.spent(user('user-4999'), 'day', NOON)).toBe(1);
  });

  it('forgets the queued amounts of end users once committed, and keeps what is still queued exact', async () => {
    const { tracker, writer, entry, user, key } = setup();
    const keyScope = { level: 'key', id: key.id } as const;
    for (let i = 0; i < 1_500; i += 1) await writer.begin(entry(1, `user-${i}`));
    // Committed amounts are the database's now; the scopes back at zero were swept as they passed 1,024.
    expect(tracker.queuedScopes).toBeLessThanOrEqual(1_025);
    expect(tracker.spent(keyScope, 'day', NOON)).toBe(1_500);
    // 2,000 users queued in one turn, none committed: the sweeps they bring drop none of them.
    const queued = Array.from({ length: 2_000 }, (_, i) => writer.begin(entry(7, `later-${i}`)));
    expect(tracker.queuedScopes).toBeGreaterThanOrEqual(2_001);
    expect(tracker.spent(user('later-0'), 'day', NOON)).toBe(7);
    expect(tracker.spent(keyScope, 'day', NOON)).toBe(15_500);
    await Promise.all(queued);
    expect(tracker.spent(user('later-0'), 'day', NOON)).toBe(7);
    expect(tracker.spent(keyScope, 'day', NOON)).toBe(15_500);
    // The burst raised the sweep's threshold to twice what it held (about 2,050): it stays bounded by that.
    for (let i = 0; i < 1_500; i += 1) await writer.begin(entry(1, `again-${i}`));
    expect(tracker.queuedScopes).toBeLessThanOrEqual(2_100);
  });

  it("holds a key's queued amounts for the day at hand only, however many days it runs", async () => {
    const { tracker, writer, entry, key } = setup();
    const keyScope = { level: 'key', id: key.id } as const;
    const DAY = 86_400_000;
    for (let day = 0; day < 30; day += 1) await writer.begin(entry(1, undefined, [], NOON + day * DAY));
    // Each day's amount went to zero when committed; the key's scope keeps one day, not thirty.
    expect(tracker.queuedDaysMost).toBe(1);
    expect(tracker.spent(keyScope, 'month', NOON + 9 * DAY)).toBe(10);
  });
});
