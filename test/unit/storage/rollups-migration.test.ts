/**
 * Upgrading a database made by the previous version: migration 0003 creates
 * the monthly, all-keys daily and lifetime rollups and fills them from
 * `rollups_daily`, so the totals are the same after the upgrade, and requests
 * still pending from before it settle into the new rollups correctly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as schema from '../../../src/storage/sqlite/schema.js';
import { MIGRATIONS_FOLDER, openDatabase, type TollgateDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { querySpend } from '../../../src/storage/sqlite/spend-reads.js';
import { tempDatabasePath } from '../../support/db.js';
import { expectLongerRollupsEqualRows } from './rollup-checks.js';

const NEW_MIGRATION = '0003_rollups-monthly-lifetime';
const DAY = 86_400_000;
const T0 = Date.parse('2026-10-20T08:00:00Z');
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A database at the previous version: every migration before {@link NEW_MIGRATION}, recorded as applyMigrations records them. */
function openPreviousVersion(path: string): TollgateDatabase {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ tag: string; when: number }> };
  const cutoff = journal.entries.find((entry) => entry.tag === NEW_MIGRATION)!.when;
  const sqlite = new Database(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.exec('CREATE TABLE IF NOT EXISTS __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)');
  for (const migration of readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER })) {
    if (migration.folderMillis >= cutoff) continue;
    for (const statement of migration.sql) if (statement.trim() !== '') sqlite.exec(statement);
    sqlite.prepare('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)').run(migration.hash, migration.folderMillis);
  }
  return {
    sqlite,
    db: drizzle(sqlite, { schema }),
    path,
    ledgerConnection: () => sqlite,
    setAutoCheckpoint: (pages) => sqlite.pragma(`wal_autocheckpoint = ${pages}`),
    close: () => sqlite.close(),
  };
}

interface OldRow {
  readonly id: string;
  readonly keyId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly status: 'pending' | 'ok' | 'upstream_error' | 'rejected';
  readonly est: number;
  readonly cost: number;
}

/**
 * Ledger rows and the rollups the previous version kept with them (daily and
 * hourly, equal to the rows: estimates for pending rows, actuals for settled
 * ones, refusals counted as rejections).
 */
function writeAsPreviousVersion(sqlite: Database.Database, rows: readonly OldRow[]): void {
  const insert = sqlite.prepare(
    `INSERT INTO ledger (request_id, key_id, tenant_id, created_at, completed_at, endpoint, model, stream, status, http_status,
       est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, cost_micros, error_code)
     VALUES (@id, @keyId, NULL, @createdAt, @completedAt, 'chat', @model, 0, @status, @httpStatus, 100, 1000, @est, @prompt, 0, @completion, 0, @cost, @errorCode)`,
  );
  for (const row of rows) {
    const pending = row.status === 'pending';
    const rejected = row.status === 'rejected';
    insert.run({
      ...row,
      completedAt: pending ? null : row.createdAt + 300,
      httpStatus: pending ? null : rejected ? 429 : row.status === 'ok' ? 200 : 500,
      prompt: pending ? null : rejected ? 0 : 90,
      completion: pending ? null : rejected ? 0 : 20,
      cost: pending ? null : rejected ? 0 : row.cost,
      errorCode: rejected ? 'rate_limit_exceeded' : null,
    });
  }
  const counted = `sum(status <> 'rejected'), sum(CASE WHEN status = 'pending' THEN est_prompt_tokens ELSE prompt_tokens END),
    sum(CASE WHEN status = 'pending' THEN est_completion_tokens ELSE completion_tokens END),
    sum(CASE WHEN status = 'pending' THEN est_cost_micros ELSE cost_micros END), sum(status = 'rejected')`;
  sqlite.exec(`INSERT INTO rollups_daily (key_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros, rejected_rate_limit, errors, last_request_at)
    SELECT key_id, strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, model, ${counted}, sum(status = 'upstream_error'), max(created_at)
    FROM ledger GROUP BY key_id, day, model`);
  sqlite.exec(`INSERT INTO rollups_hourly (key_id, hour, requests, prompt_tokens, completion_tokens, cost_micros, rejected_rate_limit)
    SELECT key_id, created_at - created_at % 3600000 AS hour, ${counted} FROM ledger GROUP BY key_id, hour`);
}

describe('upgrading to the monthly and lifetime rollups', () => {
  it('fills them from the daily rollups: the same totals after the upgrade, and old pending rows still settle exactly', async () => {
    const { dir, path } = tempDatabasePath();
    dirs.push(dir);
    const old = openPreviousVersion(path);
    expect(old.sqlite.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'rollups_monthly'").get()).toEqual({ n: 0 });
    // Keys as the previous version wrote them: today's key store expects columns added since.
    const keys = [0, 1, 2].map((n) => {
      old.sqlite
        .prepare('INSERT INTO api_keys (id, name, key_hash, prefix, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)')
        .run(`key_old_${n}`, `old-${n}`, `hash-${n}`, `tg_old${n}`, T0, T0);
      return `key_old_${n}`;
    });
    const statuses = ['ok', 'ok', 'upstream_error', 'rejected', 'pending'] as const;
    const rows: OldRow[] = Array.from({ length: 120 }, (_, i) => ({
      id: `old-${i}`,
      keyId: keys[i % 3]!,
      // Across the end of October into November, a few hours apart.
      createdAt: T0 + i * 7 * 3_600_000,
      model: i % 4 === 0 ? 'gpt-4o' : 'gpt-4o-mini',
      status: statuses[i % statuses.length]!,
      est: 600 + i,
      cost: 25 + ((i * 37) % 400),
    }));
    writeAsPreviousVersion(old.sqlite, rows);
    // What the previous version's `tollgate spend` printed: sums of rollups_daily.
    const sums =
      'requests AS requests, prompt_tokens AS promptTokens, cached_tokens AS cachedTokens, completion_tokens AS completionTokens, reasoning_tokens AS reasoningTokens, cost_micros AS costMicros, errors AS errors, rejected_rate_limit AS rejectedRateLimit, rejected_budget AS rejectedBudget';
    const summed = sums.replace(/(\w+) AS (\w+)/g, 'sum($1) AS $2');
    const before = keys.map((keyId) => old.sqlite.prepare(`SELECT ${summed} FROM rollups_daily WHERE key_id = ?`).get(keyId));
    const monthsBefore = ['2026-10', '2026-11'].map((month) =>
      old.sqlite.prepare(`SELECT ${summed} FROM rollups_daily WHERE substr(day, 1, 7) = ?`).get(month),
    );
    const daysBefore = old.sqlite.prepare(`SELECT day, ${summed} FROM rollups_daily GROUP BY day ORDER BY day`).all();
    old.close();

    const upgraded = openDatabase(path);
    try {
      const sql = upgraded.sqlite;
      expectLongerRollupsEqualRows(sql);
      // The new rollups hold what `tollgate spend` printed before the upgrade, and it still prints it.
      keys.forEach((keyId, n) => expect(sql.prepare(`SELECT ${sums} FROM rollups_lifetime WHERE key_id = ?`).get(keyId)).toEqual(before[n]));
      ['2026-10', '2026-11'].forEach((month, n) =>
        expect(sql.prepare(`SELECT ${summed} FROM rollups_monthly WHERE month = ?`).get(month)).toEqual(monthsBefore[n]),
      );
      expect(sql.prepare(`SELECT day, ${summed} FROM rollups_daily_total GROUP BY day ORDER BY day`).all()).toEqual(daysBefore);
      const now = T0 + 40 * DAY;
      expect(querySpend(upgraded, { since: '2026-10-01', until: '2026-10-31', by: 'total' }, now).total).toEqual(monthsBefore[0]);
      keys.forEach((keyId, n) => expect(querySpend(upgraded, { keyId, since: '0000-01-01', by: 'total' }, now).total).toEqual(before[n]));

      // The new writer settles a request left pending by the old version, and adds new ones.
      const writer = new SqliteLedgerWriter(upgraded);
      const pendingOld = rows.filter((row) => row.status === 'pending').slice(0, 5);
      for (const row of pendingOld) {
        writer.complete({
          requestId: row.id,
          completedAt: row.createdAt + 500,
          status: 'ok',
          httpStatus: 200,
          promptTokens: 80,
          cachedTokens: 0,
          completionTokens: 30,
          reasoningTokens: 0,
          costMicros: 11,
          usageSource: 'reported',
          latencyMs: 500,
          ttftMs: null,
          upstreamRequestId: null,
          errorCode: null,
        });
      }
      const begun = writer.begin({
        requestId: 'new-1',
        keyId: keys[0]!,
        tenantId: null,
        createdAt: T0 + 20 * DAY,
        endpoint: 'chat',
        model: 'gpt-4o',
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 100,
        estCostMicros: 70,
        priceKnown: true,
      });
      writer.flush();
      await begun;
      writer.close();
      expect(sql.prepare("SELECT count(*) AS n FROM ledger WHERE status = 'pending'").get()).toEqual({
        n: rows.filter((row) => row.status === 'pending').length - 5 + 1,
      });
      expectLongerRollupsEqualRows(sql);
    } finally {
      upgraded.close();
    }
  });
});
