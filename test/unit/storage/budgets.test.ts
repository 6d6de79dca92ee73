/** Budgets read the ledger's spend exactly, between commits and across processes sharing the file. */
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { Completion, PendingEntry } from '../../../src/storage/ledger.js';
import { SpendTracker } from '../../../src/budgets/spend-tracker.js';
import fc from 'fast-check';
import { calendarDay, dayStartMs, periodEnd, periodId, periodStart, setTimeZone, type BudgetPeriod } from '../../../src/domain/calendar.js';
import { checkBudgets, type BudgetCheck } from '../../../src/budgets/check.js';
import { formatMicrosFixed } from '../../../src/domain/money.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';

const opened: TempDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.remove();
});

const NOON = Date.parse('2026-11-21T12:00:00Z');

function setup() {
  const db = openTempDatabase();
  opened.push(db);
  const store = new KeyStore(db.database);
  const key = store.createKey({ name: 'spender', tenant: 'acme', policy: { limits: [] } }).view;
  const other = store.createKey({ name: 'sibling', tenant: 'acme', policy: { limits: [] } }).view;
  const tracker = new SpendTracker(db.database, { refreshMs: 1000 });
  const writer = new SqliteLedgerWriter(db.database, { spend: tracker });
  return { db, key, other, tracker, writer };
}

let sequence = 0;
function pending(keyId: string, tenantId: string | null, cost: number, at = NOON): PendingEntry {
  sequence += 1;
  return {
    requestId: `b-${sequence}`,
    keyId,
    tenantId,
    createdAt: at,
    endpoint: 'chat',
    model: 'gpt-4o',
    stream: false,
    estPromptTokens: 10,
    estCompletionTokens: 100,
    estCostMicros: cost,
    priceKnown: true,
  };
}
function settled(requestId: string, cost: number, at = NOON + 1000): Completion {
  return {
    requestId,
    completedAt: at,
    status: 'ok',
    httpStatus: 200,
    promptTokens: 10,
    cachedTokens: 0,
    completionTokens: 5,
    reasoningTokens: 0,
    costMicros: cost,
    usageSource: 'reported',
    latencyMs: 1000,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: null,
  };
}

describe('budgets', () => {
  it('admits exactly as many concurrent requests as the budget holds, within one event-loop turn', async () => {
    const { key, tracker, writer } = setup();
    const checks: BudgetCheck[] = [{ scope: { level: 'key', id: key.id }, label: 'key spender', budget: { microUsd: 1_000_000, period: 'day' } }];
    const admitted: Array<Promise<void>> = [];
    let refused = 0;
    for (let i = 0; i < 100; i += 1) {
      const decision = checkBudgets(tracker, checks, 70_000, NOON);
      if (!decision.ok) {
        refused += 1;
        continue;
      }
      admitted.push(writer.begin(pending(key.id, key.tenantId, 70_000)));
    }
    expect(admitted).toHaveLength(14); // 14 × $0.07 = $0.98; a 15th would pass $1
    expect(refused).toBe(86);
    await Promise.all(admitted);
    const decision = checkBudgets(tracker, checks, 70_000, NOON + 10);
    expect(decision.ok).toBe(false);
  });

  it('frees what a settled request did not use', async () => {
    const { key, tracker, writer } = setup();
    const checks: BudgetCheck[] = [{ scope: { level: 'key', id: key.id }, label: 'key spender', budget: { microUsd: 100_000, period: 'month' } }];
    const entry = pending(key.id, key.tenantId, 90_000);
    await writer.begin(entry);
    expect(checkBudgets(tracker, checks, 20_000, NOON).ok).toBe(false);
    writer.complete(settled(entry.requestId, 5_000));
    // Queued, not committed yet: already counted at its actual cost.
    const now = checkBudgets(tracker, checks, 20_000, NOON + 5);
    expect(now.ok).toBe(true);
    expect(now.ok && now.tightest?.remainingMicroUsd).toBe(100_000 - 5_000 - 20_000);
    writer.flush();
    expect(tracker.spent({ level: 'key', id: key.id }, 'month', NOON + 6)).toBe(5_000);
  });

  it('sums a tenant over all its keys and refuses by the tenant budget', async () => {
    const { key, other, tracker, writer } = setup();
    await writer.begin(pending(other.id, other.tenantId, 400_000));
    const checks: BudgetCheck[] = [
      { scope: { level: 'key', id: key.id }, label: 'key spender', budget: { microUsd: 10_000_000, period: 'day' } },
      { scope: { level: 'tenant', id: key.tenantId! }, label: 'tenant acme', budget: { microUsd: 500_000, period: 'day' } },
    ];
    const decision = checkBudgets(tracker, checks, 150_000, NOON);
    expect(decision.ok).toBe(false);
    expect(!decision.ok && decision.refusedBy.check.label).toBe('tenant acme');
    expect(!decision.ok && decision.refusedBy.spentMicroUsd).toBe(400_000);
  });

  it('sees spend written by another process once its cached read expires', async () => {
    const { db, key, tracker } = setup();
    const scope = { level: 'key' as const, id: key.id };
    expect(tracker.spent(scope, 'day', NOON)).toBe(0);
    // Another process (its own connection and writer) spends $0.30.
    const elsewhere = openDatabase(db.path);
    const theirs = new SqliteLedgerWriter(elsewhere);
    const entry = pending(key.id, key.tenantId, 300_000);
    await theirs.begin(entry);
    theirs.close();
    elsewhere.close();
    expect(tracker.spent(scope, 'day', NOON + 500)).toBe(0); // cached
    expect(tracker.spent(scope, 'day', NOON + 1000)).toBe(300_000); // re-read
  });

  it('files a request settled after midnight under the day it was made', async () => {
    const { key, tracker, writer } = setup();
    const late = Date.parse('2026-11-21T23:59:59Z');
    const entry = pending(key.id, key.tenantId, 50_000, late);
    await writer.begin(entry);
    writer.complete(settled(entry.requestId, 80_000, late + 5000));
    writer.flush();
    const scope = { level: 'key' as const, id: key.id };
    expect(tracker.spent(scope, 'day', late + 10_000)).toBe(0); // the 22nd: nothing yet
    expect(tracker.spent(scope, 'month', late + 10_000)).toBe(80_000);
    expect(tracker.spent(scope, 'day', late)).toBe(80_000);
  });

  it('knows when each period resets, in UTC', () => {
    expect(periodEnd('day', Date.parse('2026-11-21T23:00:00Z'))).toBe(Date.parse('2026-11-22T00:00:00Z'));
    expect(periodEnd('month', Date.parse('2026-12-31T10:00:00Z'))).toBe(Date.parse('2027-01-01T00:00:00Z'));
    expect(periodEnd('total', NOON)).toBeUndefined();
    expect(formatMicrosFixed(12_500_000)).toBe('12.500000');
    expect(formatMicrosFixed(-3)).toBe('-0.000003');
  });

  it('counts a week from Monday and checks every budget of a key at once (day and week and month)', async () => {
    const { key, tracker, writer } = setup();
    const sunday = Date.parse('2026-11-22T10:00:00Z');
    const monday = Date.parse('2026-11-16T10:00:00Z');
    for (const [at, cost] of [
      [Date.parse('2026-11-15T10:00:00Z'), 1_000], // the Sunday before: last week
      [monday, 20_000],
      [sunday, 3_000],
    ] as const) {
      const entry = pending(key.id, key.tenantId, cost, at);
      await writer.begin(entry);
      writer.complete(settled(entry.requestId, cost, at + 1000));
    }
    writer.flush();
    const scope = { level: 'key' as const, id: key.id };
    expect(tracker.spent(scope, 'week', sunday)).toBe(23_000);
    expect(tracker.spent(scope, 'day', sunday)).toBe(3_000);
    expect(tracker.spent(scope, 'month', sunday)).toBe(24_000);
    expect(periodEnd('week', sunday)).toBe(Date.parse('2026-11-23T00:00:00Z'));
    const checks: BudgetCheck[] = [
      { scope, label: 'key spender', budget: { microUsd: 10_000, period: 'day' } },
      { scope, label: 'key spender', budget: { microUsd: 25_000, period: 'week' } },
    ];
    // The day has room for 7,000 but the week only for 2,000: the week refuses.
    expect(checkBudgets(tracker, checks, 2_000, sunday).ok).toBe(true);
    const refused = checkBudgets(tracker, checks, 2_001, sunday);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.refusedBy.check.budget.period).toBe('week');
  });
});

describe('calendar periods in the deployment time zone', () => {
  afterEach(() => setTimeZone('UTC'));

  it('files days, weeks and months by the local calendar, across a DST change', () => {
    setTimeZone('America/New_York');
    // 03:30 UTC on the 1st of November is still the 31st of October in New York (EDT, UTC−4).
    const late = Date.parse('2026-11-01T03:30:00Z');
    expect(calendarDay(late)).toBe('2026-10-31');
    expect(periodId('month', late)).toBe('2026-10');
    expect(periodEnd('day', late)).toBe(Date.parse('2026-11-01T04:00:00Z'));
    // The 1st of November 2026 is 25 hours long there (back to EST, UTC−5).
    expect(periodEnd('day', Date.parse('2026-11-01T12:00:00Z'))).toBe(Date.parse('2026-11-02T05:00:00Z'));
    expect(dayStartMs('2026-11-01')).toBe(Date.parse('2026-11-01T04:00:00Z'));
    expect(periodStart('week', Date.parse('2026-11-02T03:00:00Z'))).toBe('2026-10-26'); // still Sunday the 1st locally
    expect(periodId('week', Date.parse('2026-11-02T06:00:00Z'))).toBe('W2026-11-02');
  });

  it('is UTC unless set, and refuses names the runtime does not know', () => {
    expect(calendarDay(Date.parse('2026-11-01T03:30:00Z'))).toBe('2026-11-01');
    expect(() => setTimeZone('Mars/Olympus_Mons')).toThrow(RangeError);
  });

  it('agrees with Intl on the local day of any instant, in several zones (property)', () => {
    for (const zone of ['Asia/Kolkata', 'Australia/Lord_Howe', 'America/Sao_Paulo', 'Pacific/Chatham', 'Europe/London']) {
      setTimeZone(zone);
      const format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
      fc.assert(
        fc.property(fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2030-01-01T00:00:00Z') }), (ms) => {
          const day = calendarDay(ms);
          expect(day).toBe(format.format(ms));
          expect(dayStartMs(day)).toBeLessThanOrEqual(ms);
          expect(periodEnd('day', ms)).toBeGreaterThan(ms);
        }),
        { numRuns: 300 },
      );
    }
  });

  it('answers a period end it remembers as it would compute it afresh, whatever was asked before (property)', () => {
    const instant = fc.integer({ min: Date.parse('2025-12-01T00:00:00Z'), max: Date.parse('2027-02-01T00:00:00Z') });
    for (const zone of ['UTC', 'America/New_York', 'Australia/Lord_Howe']) {
      setTimeZone(zone);
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.constantFrom('day', 'week', 'month') as fc.Arbitrary<BudgetPeriod>, instant), { minLength: 1, maxLength: 30 }),
          (asks) => {
            for (const [period, ms] of asks) {
              const remembered = periodEnd(period, ms);
              setTimeZone(zone); // forgets every remembered end
              expect(remembered).toBe(periodEnd(period, ms));
              expect(remembered).toBeGreaterThan(ms);
            }
          },
        ),
        { numRuns: 100 },
      );
    }
  });
});
