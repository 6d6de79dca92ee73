/** `tollgate migrate` on PostgreSQL: several nodes starting at once apply each migration once. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migratePg, openPg } from '../../../src/storage/postgres/open.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

let db: TempPostgres;

beforeAll(async () => {
  db = await createTempPostgres({ migrate: false });
});
afterAll(async () => {
  await db.drop();
});

it('applies every migration exactly once when five processes migrate together', async () => {
  const pools = Array.from({ length: 5 }, () => openPg(db.url));
  try {
    const applied = await Promise.all(pools.map((pool) => migratePg(pool)));
    expect(applied.filter((n) => n > 0)).toHaveLength(1);
    expect(applied.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(2);
    const tables = await db.pool.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`);
    expect(tables.rows.map((r) => r.t)).toEqual([
      'admins',
      'alert_claims',
      'api_keys',
      'audit_log',
      'batch_files',
      'batch_jobs',
      'dashboard_tokens',
      'ledger',
      'ledger_retention',
      'reconciliations',
      'responses',
      'rollup_names',
      'rollups_daily',
      'rollups_daily_total',
      'rollups_end_users',
      'rollups_hourly',
      'rollups_lifetime',
      'rollups_monthly',
      'rollups_tags',
      'tenants',
    ]);
    expect(await migratePg(pools[0]!)).toBe(0);
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
  }
});
