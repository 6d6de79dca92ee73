/**
 * Spend reports in pages on PostgreSQL (replicas): the same pages, in the same
 * order and with the same cursors as SQLite's over the same rows, concatenating
 * to the whole report; a bad cursor is a 400.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { addDays, calendarDay } from '../../../src/domain/calendar.js';
import { TollgateError } from '../../../src/domain/errors.js';
import { PgKeyStore } from '../../../src/keys/pg-store.js';
import { KeySync } from '../../../src/keys/pg-sync.js';
import { LedgerShipper } from '../../../src/ledger/shipper.js';
import { LedgerWriter } from '../../../src/ledger/writer.js';
import { queryPgSpend } from '../../../src/storage/postgres/spend-reads.js';
import { querySpend } from '../../../src/storage/sqlite/spend-reads.js';
import { SPEND_GROUPINGS, type SpendQuery, type SpendReport } from '../../../src/storage/spend-reads.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

let pg: TempPostgres;
let local: TempDatabase;
const NOW = Date.parse('2026-11-21T15:00:00Z');
const today = calendarDay(NOW);
const since = addDays(today, -40);
const keyIds: string[] = [];

beforeAll(async () => {
  pg = await createTempPostgres();
  local = openTempDatabase();
  const store = new PgKeyStore(pg.pool);
  for (const [name, tenant] of [
    ['pg-pages-a', 'acme'],
    ['pg-pages-b', 'acme'],
    ['pg-pages-c', undefined],
  ] as const) {
    keyIds.push((await store.createKey({ name, ...(tenant === undefined ? {} : { tenant }), policy: { limits: [] } })).view.id);
  }
  await new KeySync(pg.pool, local.database, { url: pg.url }).pull();
  const writer = new LedgerWriter(local.database);
  const models = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o4-mini'];
  await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      writer.begin({
        requestId: `pg-page-${i}`,
        keyId: keyIds[i % 3]!,
        tenantId: null,
        // Over 40 days: whole months come from the monthly rollup, the rest from the daily one.
        createdAt: NOW - (i % 41) * 86_400_000 - i,
        endpoint: 'chat',
        model: models[i % 4]!,
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: 50 * (i % 3),
        priceKnown: true,
        ...(i % 6 === 0 ? {} : { endUser: `User-${i % 23}` }),
        tags: i % 2 === 0 ? [`tag-${i % 13}`, 'Zeta'] : [],
      }),
    ),
  );
  expect(writer.close()).toBe(true);
  await new LedgerShipper(pg.pool, local.database).drain();
});
afterAll(async () => {
  local.remove();
  await pg.drop();
});

async function pages(query: SpendQuery, limit: number): Promise<SpendReport[]> {
  const out: SpendReport[] = [];
  let cursor: string | undefined;
  do {
    const page = await queryPgSpend(pg.pool, { ...query, limit, cursor }, NOW);
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    out.push(page);
    cursor = page.hasMore ? page.nextCursor! : undefined;
  } while (cursor !== undefined);
  return out;
}

it('pages every grouping as SQLite does, and the pages make the whole report', async () => {
  for (const by of SPEND_GROUPINGS) {
    for (const scope of [{}, { tenantId: (await new PgKeyStore(pg.pool).getTenant('acme')).id }, { keyId: keyIds[1]! }]) {
      const query: SpendQuery = { since, by, ...scope };
      const whole = await queryPgSpend(pg.pool, query, NOW);
      expect(whole.rows, by).toEqual(querySpend(local.database, query, NOW).rows);
      for (const limit of [1, 4, 100]) {
        const read = await pages(query, limit);
        expect(
          read.flatMap((page) => page.rows),
          `${by} ${JSON.stringify(scope)} limit ${limit}`,
        ).toEqual(whole.rows);
        // The same cursors as SQLite's pages (the same order, the same sort values).
        const sqlitePage = querySpend(local.database, { ...query, limit }, NOW);
        expect(read[0]!.nextCursor).toBe(sqlitePage.nextCursor);
        for (const page of read) expect(page.total).toEqual(whole.total);
      }
    }
  }
});

it('refuses a cursor of another report', async () => {
  const page = await queryPgSpend(pg.pool, { since, by: 'tag', limit: 2 }, NOW);
  await expect(queryPgSpend(pg.pool, { since, by: 'model', limit: 2, cursor: page.nextCursor! }, NOW)).rejects.toMatchObject({
    code: 'invalid_value',
    param: 'cursor',
  });
  await expect(queryPgSpend(pg.pool, { since, by: 'tag', limit: 2, cursor: 'bogus' }, NOW)).rejects.toBeInstanceOf(TollgateError);
});
