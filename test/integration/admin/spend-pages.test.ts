/**
 * Spend reports in pages: `GET /admin/api/spend` answers at most `limit` rows
 * with `hasMore` and a cursor, the pages of every grouping concatenate to the
 * whole report, a bad cursor or limit is a 400, spend.csv is the whole report,
 * and `tollgate spend` (local file and `--url`) still prints every row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type TollgateDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { querySpend } from '../../../src/storage/sqlite/spend-reads.js';
import { SPEND_GROUPINGS, type SpendReport, type SpendRow } from '../../../src/storage/spend-reads.js';
import { calendarDay, addDays } from '../../../src/domain/calendar.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';
import { csvObjects } from '../../support/csv.js';

const ADMIN = 'admin-token-for-pages-0123456789';
let proxy: TestProxy;
let database: TollgateDatabase;
const today = calendarDay(Date.now());
const since = addDays(today, -3);
/** End users of one key today: more than the API's default page of 1,000 rows. */
const MANY_USERS = 1_100;

async function admin(path: string): Promise<Response> {
  return fetch(`${proxy.server.url}/admin/api${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
}

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  database = openDatabase(proxy.dbPath);
  const store = new KeyStore(database);
  const keys = [
    store.createKey({ name: 'pages-a', tenant: 'acme', policy: { limits: [] } }).view.id,
    store.createKey({ name: 'pages-b', tenant: 'acme', policy: { limits: [] } }).view.id,
    store.createKey({ name: 'pages-c', policy: { limits: [] } }).view.id,
  ];
  // Spread over keys, days, models, end users and tags, with many equal costs (the order's ties must page too).
  const writer = new SqliteLedgerWriter(database);
  const models = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'o4-mini'];
  const begins: Array<Promise<void>> = [];
  for (let i = 0; i < 240; i += 1) {
    begins.push(
      writer.begin({
        requestId: `page-${i}`,
        keyId: keys[i % 3]!,
        tenantId: null,
        createdAt: Date.parse(`${addDays(today, -(i % 4))}T00:00:00Z`) + i * 1000,
        endpoint: 'chat',
        model: models[i % 5]!,
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: 100 * (i % 4),
        priceKnown: true,
        ...(i % 5 === 0 ? {} : { endUser: `user-${i % 37}` }),
        tags: i % 2 === 0 ? [`tag-${i % 11}`, `tag-${i % 7}`] : [],
      }),
    );
  }
  for (let i = 0; i < MANY_USERS; i += 1) {
    begins.push(
      writer.begin({
        requestId: `many-${i}`,
        keyId: keys[2]!,
        tenantId: null,
        createdAt: Date.now(),
        endpoint: 'chat',
        model: 'gpt-4o-mini',
        stream: false,
        estPromptTokens: 1,
        estCompletionTokens: 1,
        estCostMicros: i % 3,
        priceKnown: true,
        endUser: `crowd-${i}`,
      }),
    );
  }
  await Promise.all(begins);
  expect(writer.close()).toBe(true);
});
afterAll(async () => {
  database.close();
  await proxy.close();
});

/** Every page of a report through the API, checking each one's size; returns the pages. */
async function pagesOf(query: string, limit: number): Promise<SpendReport[]> {
  const pages: SpendReport[] = [];
  let cursor: string | null = null;
  do {
    const res = await admin(`/spend?${query}&limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as SpendReport;
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    if (page.hasMore) expect(page.rows.length).toBe(limit);
    pages.push(page);
    cursor = page.hasMore ? page.nextCursor : null;
    expect(pages.length).toBeLessThan(1000);
  } while (cursor !== null);
  return pages;
}

describe('GET /admin/api/spend in pages', () => {
  it('gives pages that concatenate to the whole report, for every grouping, key and tenant', async () => {
    const acme = new KeyStore(database).getTenant('acme').id;
    for (const by of SPEND_GROUPINGS) {
      for (const scope of [{}, { tenant: 'acme', tenantId: acme }, { key: 'pages-b', keyId: new KeyStore(database).getKey('pages-b').id }]) {
        const { tenantId, keyId, ...params } = scope as { tenantId?: string; keyId?: string; tenant?: string; key?: string };
        const whole = querySpend(database, { since, by, tenantId, keyId });
        // Small pages where the report is small; over every key (1,100 end users of one key) larger ones.
        for (const limit of 'key' in scope || 'tenant' in scope ? [1, 7, 50] : [50, 333]) {
          const query = new URLSearchParams({ by, since, ...params }).toString();
          const pages = await pagesOf(query, limit);
          const rows: SpendRow[] = pages.flatMap((page) => page.rows);
          expect(rows, `${by} ${query} limit ${limit}`).toEqual(whole.rows);
          for (const page of pages) {
            expect(page.total).toEqual(whole.total);
            expect(page.pending).toBe(whole.pending);
          }
        }
      }
    }
  });

  it('answers the first 1,000 rows when no limit is given, and more than 5,000 rows a page never', async () => {
    const first = (await (await admin(`/spend?by=user&since=${since}`)).json()) as SpendReport;
    expect(first.rows).toHaveLength(1000);
    expect(first.hasMore).toBe(true);
    for (const limit of ['0', '5001', '-3', '2.5', 'many']) {
      const res = await admin(`/spend?by=user&since=${since}&limit=${limit}`);
      expect(res.status, limit).toBe(400);
      expect(((await res.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: 'invalid_value', param: 'limit' });
    }
  });

  it('refuses a cursor it did not give, or one given for another report, with 400', async () => {
    const page = (await (await admin(`/spend?by=tag&since=${since}&limit=2`)).json()) as SpendReport;
    const cursor = page.nextCursor!;
    const tampered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(cursor, 'base64url').toString()), p: ['a', 'x', 1, 2] })).toString('base64url');
    for (const [query, why] of [
      [`by=tag&since=${since}&cursor=not-a-cursor!`, 'garbage'],
      [`by=tag&since=${since}&cursor=${Buffer.from('{"v":1}').toString('base64url')}`, 'incomplete'],
      [`by=tag&since=${since}&cursor=${tampered}`, 'tampered'],
      [`by=user&since=${since}&cursor=${cursor}`, 'another grouping'],
      [`by=tag&since=${today}&cursor=${cursor}`, 'another range'],
      [`by=tag&since=${since}&key=pages-a&cursor=${cursor}`, 'another key'],
    ]) {
      const res = await admin(`/spend?${query}`);
      expect(res.status, why).toBe(400);
      expect(((await res.json()) as { error: { code: string; param: string } }).error, why).toMatchObject({ code: 'invalid_value', param: 'cursor' });
    }
  });

  it('streams the whole report as spend.csv, however many pages it takes', async () => {
    const res = await admin(`/spend.csv?by=user&since=${since}&limit=100`);
    expect(res.status).toBe(200);
    const records = csvObjects(await res.text());
    const whole = querySpend(database, { since, by: 'user' });
    expect(records.map((record) => [record.user, record.key_id])).toEqual(whole.rows.map((row) => [row.group, row.keyId ?? '']));
  });
});

describe('tollgate spend', () => {
  it('prints every row, from the local file and through --url (following the pages)', async () => {
    const whole = querySpend(database, { since, by: 'user' });
    expect(whole.rows.length).toBeGreaterThan(1000);
    const local = await cli('--db', proxy.dbPath, 'spend', '--by', 'user', '--since', since, '--json');
    const remote = await cli('--url', proxy.server.url, '--admin-token', ADMIN, 'spend', '--by', 'user', '--since', since, '--json');
    for (const run of [local, remote]) {
      expect(run.code, run.stderr).toBe(0);
      const report = run.json<SpendReport>();
      expect(report.rows).toEqual(whole.rows);
      expect(report.hasMore).toBe(false);
    }
    const table = await cli('--url', proxy.server.url, '--admin-token', ADMIN, 'spend', '--by', 'user', '--since', since);
    expect(table.stdout).toContain('crowd-1099');
  });

  it('prints the first rows only with --limit, and says more follow', async () => {
    const run = await cli('--url', proxy.server.url, '--admin-token', ADMIN, 'spend', '--by', 'user', '--since', since, '--limit', '3', '--json');
    const report = run.json<SpendReport>();
    expect(report.rows).toEqual(querySpend(database, { since, by: 'user' }).rows.slice(0, 3));
    expect(report.hasMore).toBe(true);
    const table = await cli('--db', proxy.dbPath, 'spend', '--by', 'user', '--since', since, '--limit', '3');
    expect(table.stdout).toContain('more follow');
  });
});
