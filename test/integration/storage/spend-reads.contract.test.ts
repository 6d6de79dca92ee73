/**
 * Spend reports (src/storage/spend-reads.ts) over both backends: the same
 * ledger rows give the same report — per day, model, key, tenant, end user,
 * tag and in total, over every key, one tenant or one key — the figures a
 * person would add up by hand from the rows, in the same order, in pages
 * that concatenate to the whole report with the same cursors, and a cursor
 * of another report is a 400.
 */
import { beforeAll, expect, it } from 'vitest';
import { addDays, calendarDay } from '../../../src/domain/calendar.js';
import { TollgateError } from '../../../src/domain/errors.js';
import { NO_END_USER, SPEND_GROUPINGS, type SpendGrouping, type SpendQuery, type SpendReads, type SpendReport } from '../../../src/storage/spend-reads.js';
import { openSpendReads } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';
import { seedBackend } from '../../support/read-seed.js';
import { sameOnBoth } from '../../support/same-on-both.js';

const NOW = Date.parse('2026-11-21T15:00:00Z');
const today = calendarDay(NOW);
const since = addDays(today, -40);
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o4-mini'];

/** One seeded request, as a person reading the ledger would count it. */
interface Seeded {
  readonly keyId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly costMicros: number;
  readonly pending: boolean;
  readonly endUser: string | undefined;
  readonly tags: readonly string[];
}

const check = sameOnBoth(new Map());

describeBackends('spend reads', (fixture) => {
  let reads: SpendReads;
  const keys: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };
  let acme = '';
  const seeded: Seeded[] = [];

  beforeAll(async () => {
    const backend = await fixture.fresh();
    seeded.length = 0;
    await seedBackend(backend, async ({ store, writer }) => {
      keys.a = store.createKey({ name: 'pages-a', tenant: 'acme', policy: { limits: [] } }).view.id;
      keys.b = store.createKey({ name: 'pages-b', tenant: 'acme', policy: { limits: [] } }).view.id;
      keys.c = store.createKey({ name: 'pages-c', policy: { limits: [] } }).view.id;
      acme = store.getTenant('acme').id;
      const ids = [keys.a, keys.b, keys.c];
      const begins: Array<Promise<void>> = [];
      for (let i = 0; i < 300; i += 1) {
        const row: Seeded = {
          keyId: ids[i % 3]!,
          // Over 40 days: on PostgreSQL whole months come from the monthly rollup, the rest from the daily one.
          createdAt: NOW - (i % 41) * 86_400_000 - i,
          model: MODELS[i % 4]!,
          // A quarter settle at their actual cost; the rest stay pending, counted at their estimate.
          costMicros: i % 4 === 1 ? 70 * (i % 5) : 50 * (i % 3),
          pending: i % 4 !== 1,
          endUser: i % 6 === 0 ? undefined : `User-${i % 23}`,
          tags: i % 2 === 0 ? [`tag-${i % 13}`, 'Zeta'] : [],
        };
        seeded.push(row);
        begins.push(
          writer.begin({
            requestId: `page-${i}`,
            keyId: row.keyId,
            tenantId: row.keyId === keys.c ? null : acme,
            createdAt: row.createdAt,
            endpoint: 'chat',
            model: row.model,
            stream: false,
            estPromptTokens: 10,
            estCompletionTokens: 10,
            estCostMicros: 50 * (i % 3),
            priceKnown: true,
            ...(row.endUser === undefined ? {} : { endUser: row.endUser }),
            tags: [...row.tags],
          }),
        );
      }
      writer.flush();
      await Promise.all(begins);
      for (let i = 1; i < 300; i += 4) {
        const row = seeded[i]!;
        writer.complete({
          requestId: `page-${i}`,
          completedAt: row.createdAt + 500,
          status: 'ok',
          httpStatus: 200,
          promptTokens: 10,
          cachedTokens: 0,
          completionTokens: 20,
          reasoningTokens: 0,
          costMicros: row.costMicros,
          usageSource: 'reported',
          latencyMs: 500,
          ttftMs: null,
          upstreamRequestId: null,
          errorCode: null,
        });
      }
    });
    reads = openSpendReads(backend);
  });

  const names = () => ({ [keys.a]: 'pages-a', [keys.b]: 'pages-b', [keys.c]: 'pages-c' }) as Record<string, string>;

  /** The rows a person would write down for a grouping: [group, key id or '', requests, cost], in the report's order. */
  function byHand(by: SpendGrouping, scope: { keyId?: string; tenantId?: string }): Array<[string, string, number, number]> {
    const rows = seeded.filter((row) => (scope.keyId === undefined || row.keyId === scope.keyId) && (scope.tenantId === undefined || row.keyId !== keys.c));
    const sums = new Map<string, { group: string; id: string; requests: number; cost: number }>();
    const add = (group: string, id: string, row: Seeded) => {
      const sum = sums.get(`${group}\u0000${id}`) ?? { group, id, requests: 0, cost: 0 };
      sum.requests += 1;
      sum.cost += row.costMicros;
      sums.set(`${group}\u0000${id}`, sum);
    };
    for (const row of rows) {
      if (by === 'day') add(calendarDay(row.createdAt), '', row);
      if (by === 'model') add(row.model, '', row);
      if (by === 'key') add(names()[row.keyId]!, row.keyId, row);
      if (by === 'tenant') add(row.keyId === keys.c ? '(no tenant)' : 'acme', row.keyId === keys.c ? '' : acme, row);
      if (by === 'user' && row.endUser !== undefined) add(row.endUser, row.keyId, row);
      if (by === 'tag') for (const tag of row.tags) add(tag, row.keyId, row);
    }
    const byte = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const sorted = [...sums.values()].sort((x, y) => (by === 'day' ? byte(x.group, y.group) : y.cost - x.cost || byte(x.group, y.group) || byte(x.id, y.id)));
    const out: Array<[string, string, number, number]> = sorted.map((sum) => [
      sum.group,
      by === 'key' || by === 'user' || by === 'tag' ? sum.id : '',
      sum.requests,
      sum.cost,
    ]);
    if (by === 'user') {
      const unnamed = rows.filter((row) => row.endUser === undefined);
      if (unnamed.length > 0) out.push([NO_END_USER, '', unnamed.length, unnamed.reduce((sum, row) => sum + row.costMicros, 0)]);
    }
    return out;
  }

  const ids = () => ({ [keys.a]: 'key:a', [keys.b]: 'key:b', [keys.c]: 'key:c', [acme]: 'tenant:acme' });
  const scopes = () => [{}, { tenantId: acme }, { keyId: keys.b }];

  async function pages(query: SpendQuery, limit: number): Promise<SpendReport[]> {
    const out: SpendReport[] = [];
    let cursor: string | undefined;
    do {
      const page = await reads.spend({ ...query, limit, cursor }, NOW);
      expect(page.rows.length).toBeLessThanOrEqual(limit);
      if (page.hasMore) expect(page.rows.length).toBe(limit);
      out.push(page);
      cursor = page.hasMore ? page.nextCursor! : undefined;
      expect(out.length).toBeLessThan(1000);
    } while (cursor !== undefined);
    return out;
  }

  it('sums every grouping as the rows add up by hand, with the totals and the requests in flight', async () => {
    for (const by of SPEND_GROUPINGS) {
      for (const scope of scopes()) {
        const report = await reads.spend({ since, by, ...scope }, NOW);
        const label = `${by} ${JSON.stringify(scope)}`;
        expect(
          report.rows.map((row) => [row.group, row.keyId ?? '', row.requests, row.costMicros]),
          label,
        ).toEqual(by === 'total' ? [] : byHand(by, scope));
        const counted = seeded.filter((row) => (scope.keyId === undefined || row.keyId === scope.keyId) && (!('tenantId' in scope) || row.keyId !== keys.c));
        expect(report.total.requests, label).toBe(counted.length);
        expect(report.total.costMicros, label).toBe(counted.reduce((sum, row) => sum + row.costMicros, 0));
        expect(report.pending, label).toBe(counted.filter((row) => row.pending).length);
        expect(report).toMatchObject({ since, until: today, by, hasMore: false, nextCursor: null });
        if (by === 'key' || by === 'user' || by === 'tag')
          for (const row of report.rows.filter((r) => r.group !== NO_END_USER)) expect(row.prefix, label).toMatch(/^tg-/);
        check(fixture.name, `whole ${label}`, report, ids());
      }
    }
  });

  it('pages every grouping: the pages make the whole report, each with its total, and the same cursors on both backends', async () => {
    for (const by of SPEND_GROUPINGS) {
      for (const scope of scopes()) {
        const query: SpendQuery = { since, by, ...scope };
        const whole = await reads.spend(query, NOW);
        for (const limit of [1, 4, 100]) {
          const read = await pages(query, limit);
          const label = `${by} ${JSON.stringify(scope)} limit ${limit}`;
          expect(
            read.flatMap((page) => page.rows),
            label,
          ).toEqual(whole.rows);
          for (const page of read) {
            expect(page.total, label).toEqual(whole.total);
            expect(page.pending, label).toBe(whole.pending);
          }
          check(
            fixture.name,
            `cursors ${label}`,
            read.map((page) => page.nextCursor),
            ids(),
          );
        }
      }
    }
  });

  it('reads a range of past days, and nothing before the first row', async () => {
    const week = await reads.spend({ since: addDays(today, -13), until: addDays(today, -7), by: 'day' }, NOW);
    expect(week.rows.map((row) => row.group)).toEqual(Array.from({ length: 7 }, (_, i) => addDays(today, -13 + i)));
    expect(week.total.requests).toBe(
      seeded.filter((row) => calendarDay(row.createdAt) >= addDays(today, -13) && calendarDay(row.createdAt) <= addDays(today, -7)).length,
    );
    check(fixture.name, 'past week', week, ids());
    const before = await reads.spend({ since: '2026-01-01', until: '2026-01-31', by: 'key' }, NOW);
    expect(before).toMatchObject({ rows: [], pending: 0, total: { requests: 0, costMicros: 0 } });
  });

  it('refuses a cursor of another report, or one it did not give', async () => {
    const page = await reads.spend({ since, by: 'tag', limit: 2 }, NOW);
    await expect(reads.spend({ since, by: 'model', limit: 2, cursor: page.nextCursor! }, NOW)).rejects.toMatchObject({
      code: 'invalid_value',
      param: 'cursor',
    });
    await expect(reads.spend({ since, by: 'tag', keyId: keys.a, limit: 2, cursor: page.nextCursor! }, NOW)).rejects.toMatchObject({ param: 'cursor' });
    await expect(reads.spend({ since, by: 'tag', limit: 2, cursor: 'bogus' }, NOW)).rejects.toBeInstanceOf(TollgateError);
    const cursor = page.nextCursor!;
    const tampered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(cursor, 'base64url').toString()), p: ['a', 'x', 1, 2] })).toString('base64url');
    for (const [query, why] of [
      [{ since, by: 'tag', cursor: 'not-a-cursor!' }, 'garbage'],
      [{ since, by: 'tag', cursor: Buffer.from('{"v":1}').toString('base64url') }, 'incomplete'],
      [{ since, by: 'tag', cursor: tampered }, 'tampered'],
      [{ since, by: 'user', cursor }, 'another grouping'],
      [{ since: today, by: 'tag', cursor }, 'another range'],
      [{ since, by: 'tag', until: addDays(today, -1), cursor }, 'another last day'],
      [{ since, by: 'tag', tenantId: acme, cursor }, 'another tenant'],
    ] as Array<[SpendQuery, string]>) {
      await expect(reads.spend({ ...query, limit: 2 }, NOW), why).rejects.toMatchObject({ code: 'invalid_value', param: 'cursor' });
    }
  });
});
