/**
 * What budgets read from the database: the month from the monthly rollup and
 * "total" from the lifetime rollup must equal the sum of the daily rollups
 * over the period up to today, for a key and for a tenant, including when
 * rows were filed after today (a clock set back).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SpendTracker } from '../../../src/budgets/spend-tracker.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { periodStart, calendarDay, type BudgetPeriod } from '../../../src/domain/calendar.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-18T15:00:00Z');
const opened: TempDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.remove();
});

describe('budget reads', () => {
  it('equal the sum of the daily rollups from the start of the period to today, for keys and tenants', async () => {
    const db = openTempDatabase();
    opened.push(db);
    const store = new KeyStore(db.database);
    const a = store.createKey({ name: 'a', tenant: 'acme', policy: { limits: [] } }).view;
    const b = store.createKey({ name: 'b', tenant: 'acme', policy: { limits: [] } }).view;
    const writer = new SqliteLedgerWriter(db.database);
    // Last month, this month, today, later today, tomorrow and next month (filed after today).
    const offsets = [-40, -20, -3, 0, 0.3, 1, 14];
    let n = 0;
    for (const key of [a, b]) {
      for (const days of offsets) {
        n += 1;
        const createdAt = NOW + days * DAY;
        const begun = writer.begin({
          requestId: `r${n}`,
          keyId: key.id,
          tenantId: key.tenantId,
          createdAt,
          endpoint: 'chat',
          model: n % 2 === 0 ? 'gpt-4o' : 'gpt-4o-mini',
          stream: false,
          estPromptTokens: 10,
          estCompletionTokens: 10,
          estCostMicros: 1_000 * n,
          priceKnown: true,
        });
        writer.flush();
        await begun;
        if (n % 3 !== 0)
          writer.complete({
            requestId: `r${n}`,
            completedAt: createdAt + 100,
            status: 'ok',
            httpStatus: 200,
            promptTokens: 5,
            cachedTokens: 0,
            completionTokens: 5,
            reasoningTokens: 0,
            costMicros: 7 * n,
            usageSource: 'reported',
            latencyMs: 100,
            ttftMs: null,
            upstreamRequestId: null,
            errorCode: null,
          });
      }
    }
    writer.close();
    const sql = db.database.sqlite;
    const daysSum = (where: string, id: string, since: string) =>
      (
        sql
          .prepare(
            `SELECT coalesce(sum(r.cost_micros), 0) AS spent FROM rollups_daily r JOIN api_keys k ON k.id = r.key_id WHERE ${where} = ? AND r.day >= ? AND r.day <= ?`,
          )
          .get(id, since, calendarDay(NOW)) as { spent: number }
      ).spent;
    for (const period of ['day', 'month', 'total'] as BudgetPeriod[]) {
      const since = periodStart(period, NOW);
      const tracker = new SpendTracker(db.database);
      expect(tracker.spent({ level: 'key', id: a.id }, period, NOW), `key ${period}`).toBe(daysSum('k.id', a.id, since));
      expect(tracker.spent({ level: 'tenant', id: a.tenantId! }, period, NOW), `tenant ${period}`).toBe(daysSum('k.tenant_id', a.tenantId!, since));
    }
    // The rows after today are there, and left out.
    expect(new SpendTracker(db.database).spent({ level: 'key', id: b.id }, 'total', NOW)).toBeLessThan(
      (sql.prepare('SELECT cost_micros FROM rollups_lifetime WHERE key_id = ?').get(b.id) as { cost_micros: number }).cost_micros,
    );
  });
});
