/**
 * The reconciliation result stores (src/reconcile/store.ts): the same cases
 * over the SQLite file and PostgreSQL — nothing before the first run, the
 * newest result is the one shown, exactly the last 50 are kept — and on
 * PostgreSQL, 50 still when identity values skip numbers, and a 503
 * `ledger_unavailable` while it is unreachable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPg } from '../../../src/storage/postgres/open.js';
import { pgReconciliations } from '../../../src/storage/postgres/reconciliations.js';
import { sqliteReconciliations } from '../../../src/storage/sqlite/reconciliations.js';
import type { ReconciliationReport, ReconciliationStore } from '../../../src/reconcile/store.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');

function report(n: number): ReconciliationReport {
  const side = { requests: n, inputTokens: 10 * n, cachedInputTokens: 0, outputTokens: n, costMicros: 1_000 * n };
  return {
    provider: 'openai',
    since: '2026-11-12',
    until: '2026-11-18',
    generatedAt: NOW + n,
    byProject: false,
    tolerancePercent: 1,
    rows: [],
    differences: n % 3,
    priceFlags: [],
    unattributedCosts: [],
    totals: { ledger: side, provider: side },
    pending: n % 2,
  };
}

interface StoreUnderTest {
  readonly results: ReconciliationStore;
  /** The `generatedAt` of every stored result, oldest first. */
  kept(): Promise<number[]>;
}

let file: TempDatabase;
let pg: TempPostgres;
const stores: Record<'sqlite' | 'postgres', StoreUnderTest> = {} as never;

beforeAll(async () => {
  file = openTempDatabase();
  pg = await createTempPostgres();
  stores.sqlite = {
    results: sqliteReconciliations(file.database),
    kept: async () => file.database.sqlite.prepare('SELECT created_at FROM reconciliations ORDER BY id').pluck().all() as number[],
  };
  stores.postgres = {
    results: pgReconciliations(pg.pool),
    kept: async () => (await pg.pool.query<{ t: number }>('SELECT created_at AS t FROM reconciliations ORDER BY id')).rows.map((row) => row.t),
  };
});

afterAll(async () => {
  file?.remove();
  await pg?.drop();
});

describe.each(['sqlite', 'postgres'] as const)('on %s', (kind) => {
  const store = () => stores[kind];

  it('has nothing before the first run, then the newest result whole', async () => {
    expect(await store().results.latest()).toBeUndefined();
    const id = await store().results.save(report(1));
    expect(await store().results.latest()).toEqual({ id, createdAt: NOW + 1, report: report(1) });
  });

  it('keeps exactly the last 50', async () => {
    for (let n = 2; n <= 53; n += 1) await store().results.save(report(n));
    expect(await store().kept()).toEqual(Array.from({ length: 50 }, (_, i) => NOW + 4 + i));
    expect((await store().results.latest())?.report).toEqual(report(53));
  });
});

describe('on postgres', () => {
  it('keeps 50 when identity values skip numbers (a rolled-back insert uses one up)', async () => {
    await pg.pool.query("SELECT setval('reconciliations_id_seq', nextval('reconciliations_id_seq') + 7)");
    await stores.postgres.results.save(report(54));
    await pg.pool.query("SELECT setval('reconciliations_id_seq', nextval('reconciliations_id_seq') + 3)");
    await stores.postgres.results.save(report(55));
    expect(await stores.postgres.kept()).toEqual(Array.from({ length: 50 }, (_, i) => NOW + 6 + i));
  });

  it('unreachable: a 503 ledger_unavailable that names PostgreSQL', async () => {
    const pool = openPg('postgres://postgres@127.0.0.1:1/tollgate', { connectTimeoutMs: 1000 });
    try {
      const results = pgReconciliations(pool);
      for (const attempt of [results.latest(), results.save(report(1))]) {
        await expect(attempt).rejects.toMatchObject({ code: 'ledger_unavailable', status: 503, message: expect.stringContaining('PostgreSQL') as unknown });
      }
    } finally {
      await pool.end();
    }
  });
});
