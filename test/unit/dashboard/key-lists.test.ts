/**
 * A key's lists in pages (GET /admin/api/dashboard/keys/:id/users, /tags,
 * /requests): at most `limit` rows, pages that concatenate to the whole list
 * in its order, 400 for a bad limit or cursor, and for a tenant's session only
 * its own keys.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sqliteDashboardTokens } from '../../../src/storage/sqlite/tenant-tokens.js';
import { querySpend } from '../../../src/storage/sqlite/spend-reads.js';
import { ADMIN_TOKEN, buildDashboardApp, recordRejection, type DashboardTestApp } from '../../support/dashboard.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let test: DashboardTestApp;
let keyId: string;
let otherKeyId: string;
let tenantCookie: string;

beforeAll(async () => {
  test = buildDashboardApp({ adminToken: ADMIN_TOKEN, now: NOW });
  test.issueKey('listed', { limits: [] }, { tenant: 'acme' });
  test.issueKey('elsewhere', { limits: [] }, { tenant: 'globex' });
  keyId = test.store.getKey('listed').id;
  otherKeyId = test.store.getKey('elsewhere').id;
  // 60 requests of 23 end users and 9 tags, many at the same millisecond and cost (ties must page too), and a few 429s.
  await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      test.ledger.begin({
        requestId: `list-${String(i).padStart(3, '0')}`,
        keyId,
        tenantId: null,
        createdAt: NOW - 3_600_000 + Math.floor(i / 4) * 1000,
        endpoint: 'chat',
        model: 'gpt-4o-mini',
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: 10 * (i % 3),
        priceKnown: true,
        endUser: `user-${i % 23}`,
        tags: [`tag-${i % 9}`],
      }),
    ),
  );
  for (let i = 0; i < 7; i += 1) recordRejection(test.ledger, { keyId, createdAt: NOW - 1000 + i, reason: 'rate_limit' });
  test.ledger.flush();
  const issued = await sqliteDashboardTokens(test.db.database).create({ tenant: 'acme', label: 'lists' }, NOW);
  tenantCookie = await test.login(issued.token);
});
afterAll(() => test.close());

interface ListPage {
  data: Array<Record<string, unknown>>;
  hasMore: boolean;
  nextCursor: string | null;
}

async function allPages(path: string, limit: number, headers: Record<string, string>): Promise<ListPage['data']> {
  const rows: ListPage['data'] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await test.request(`${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`, { headers });
    expect(res.status).toBe(200);
    const page = (await res.json()) as ListPage;
    expect(page.data.length).toBeLessThanOrEqual(limit);
    rows.push(...page.data);
    cursor = page.hasMore ? page.nextCursor : null;
  } while (cursor !== null);
  return rows;
}

const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

it('pages a key’s end users and tags, the most spent first, to the whole month’s list', async () => {
  for (const [list, by] of [
    ['users', 'user'],
    ['tags', 'tag'],
  ] as const) {
    const whole = querySpend(test.db.database, { keyId, since: '2026-11-01', by, namedOnly: true }, NOW).rows.map((row) => row.group);
    expect(whole.length).toBeGreaterThan(8);
    for (const limit of [1, 4, 500]) {
      const rows = await allPages(`/admin/api/dashboard/keys/${keyId}/${list}`, limit, ADMIN);
      expect(rows.map((row) => row.name)).toEqual(whole);
    }
  }
});

it('pages a key’s ledger rows newest first, and its 429s alone', async () => {
  const all = test.db.database.sqlite
    .prepare('SELECT request_id FROM ledger WHERE key_id = ? ORDER BY created_at DESC, request_id DESC')
    .pluck()
    .all(keyId) as string[];
  for (const limit of [1, 6, 50]) {
    const rows = await allPages(`/admin/api/dashboard/keys/${keyId}/requests`, limit, ADMIN);
    expect(rows.map((row) => row.requestId)).toEqual(all);
  }
  const refused = await allPages(`/admin/api/dashboard/keys/${keyId}/requests?status=429`, 3, ADMIN);
  expect(refused).toHaveLength(7);
  expect(refused.every((row) => row.httpStatus === 429)).toBe(true);
});

it('refuses a bad limit, status or cursor with 400', async () => {
  const first = (await (await test.request(`/admin/api/dashboard/keys/${keyId}/requests?limit=2`, { headers: ADMIN })).json()) as ListPage;
  for (const query of [
    'requests?limit=0',
    'requests?limit=501',
    'requests?status=500',
    'requests?cursor=garbage!',
    `requests?status=429&cursor=${first.nextCursor}`,
    `tags?cursor=${first.nextCursor}`,
    'users?since=yesterday-ish',
  ]) {
    const res = await test.request(`/admin/api/dashboard/keys/${keyId}/${query}`, { headers: ADMIN });
    expect(res.status, query).toBe(400);
  }
  // Another key's cursor is not this key's.
  const res = await test.request(`/admin/api/dashboard/keys/${otherKeyId}/requests?cursor=${first.nextCursor}`, { headers: ADMIN });
  expect(res.status).toBe(400);
});

it('shows a tenant’s session its own keys’ lists, and 404 for another tenant’s key', async () => {
  const own = await allPages(`/admin/api/dashboard/keys/${keyId}/users`, 10, { cookie: tenantCookie });
  expect(own.length).toBeGreaterThan(8);
  for (const list of ['users', 'tags', 'requests']) {
    const res = await test.request(`/admin/api/dashboard/keys/${otherKeyId}/${list}`, { cookie: tenantCookie });
    expect(res.status, list).toBe(404);
  }
});

it('pages a tenant’s own spend report through its session, its tenant forced on every page', async () => {
  const tenantId = test.store.getTenant('acme').id;
  const whole = querySpend(test.db.database, { tenantId, since: '2026-11-01', by: 'user' }, NOW).rows;
  const rows: unknown[] = [];
  let cursor: string | null = null;
  do {
    const res = await test.request(`/admin/api/spend?by=user&since=2026-11-01&limit=5${cursor === null ? '' : `&cursor=${cursor}`}`, {
      cookie: tenantCookie,
    });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { rows: unknown[]; hasMore: boolean; nextCursor: string | null };
    rows.push(...page.rows);
    cursor = page.hasMore ? page.nextCursor : null;
  } while (cursor !== null);
  expect(rows).toEqual(whole);
  expect(whole.length).toBeGreaterThan(20);
});
