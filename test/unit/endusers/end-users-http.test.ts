/**
 * End users and tags through the HTTP API, in-process, with the fake upstream
 * and the real `openai` SDK: recorded per ledger row, refused with a clear 400
 * when malformed, limited and budgeted per end user (each user's own buckets
 * and periods) and per tag, and reported by user and tag exactly as the
 * ledger holds them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { parseLimit, type Policy } from '../../../src/domain/policy.js';
import { ledgerExporter, spendReportCsv } from '../../../src/reports/export.js';
import { sqliteLedgerExport } from '../../../src/storage/sqlite/ledger-export.js';
import { querySpend } from '../../../src/storage/sqlite/spend-reads.js';
import { csvObjects } from '../../support/csv.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';

let fake: FakeUpstream;
let upstream: Upstream;
let clock = 0;
let wall = Date.parse('2026-11-21T12:00:00Z');
const apps: TestApp[] = [];

function build(): TestApp {
  const app = buildTestApp({ upstream, logger: captureLogs('silent').logger, limiterClock: () => clock, now: () => wall });
  apps.push(app);
  return app;
}

beforeAll(async () => {
  fake = await startFakeUpstream();
  upstream = createUpstream({ url: fake.url, apiKey: 'sk', connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 32 });
});
afterAll(async () => {
  for (const app of apps) app.close();
  await upstream.close();
  await fake.close();
});

/** Every answer as long as its limit allows, so each request bills about what it reserved. */
const FULL = { 'x-fake-scenario': 'words=1000' };

function chat(app: TestApp, key: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Response> {
  return Promise.resolve(
    app.app.request('http://tollgate.test/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...FULL, ...headers },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 50, ...body }),
    }),
  );
}

async function settle(responses: Array<Promise<Response>>): Promise<Array<{ status: number; code: string | undefined }>> {
  return Promise.all(
    responses.map(async (p) => {
      const res = await p;
      const text = await res.text();
      const code = res.status === 200 ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code;
      return { status: res.status, code };
    }),
  );
}

interface Row {
  request_id: string;
  status: string;
  end_user: string | null;
  tags: string | null;
  cost_micros: number | null;
  est_cost_micros: number;
}

function rows(app: TestApp): Row[] {
  app.ledger.flush();
  return app.db.database.sqlite
    .prepare('SELECT request_id, status, end_user, tags, cost_micros, est_cost_micros FROM ledger ORDER BY created_at')
    .all() as Row[];
}

/** Micro-USD the ledger holds per end user (settled at cost, pending at estimate). */
function ledgerSpendBy(app: TestApp, column: 'end_user'): Map<string | null, number> {
  const spend = new Map<string | null, number>();
  for (const row of rows(app))
    spend.set(row[column], (spend.get(row[column]) ?? 0) + (row.status === 'pending' ? row.est_cost_micros : (row.cost_micros ?? 0)));
  return spend;
}

async function flushed(app: TestApp): Promise<void> {
  await fake.settled();
  for (let i = 0; i < 50 && rows(app).some((row) => row.status === 'pending'); i += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe('recording', () => {
  it('records the body user, the x-tollgate-user header over it, safety_identifier, and tags from the header or metadata', async () => {
    const app = build();
    const key = app.issueKey('recorder', { limits: [] });
    const results = await settle([
      chat(app, key, { user: 'alice@example.com' }),
      chat(app, key, { user: 'ignored' }, { 'x-tollgate-user': 'bob', 'x-tollgate-tags': 'search, beta,search' }),
      chat(app, key, { safety_identifier: 'hash-123', metadata: { tags: 'batch' } }),
      chat(app, key),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    await flushed(app);
    expect(rows(app).map((row) => [row.end_user, row.tags])).toEqual([
      ['alice@example.com', null],
      ['bob', 'search,beta'],
      ['hash-123', 'batch'],
      [null, null],
    ]);
    // Tollgate's own headers stay with Tollgate; the body (and its user) goes upstream unchanged.
    const sent = fake.requests.slice(-4);
    expect(sent.every((request) => request.headers['x-tollgate-user'] === undefined && request.headers['x-tollgate-tags'] === undefined)).toBe(true);
    expect((sent[1]!.body as { user: string }).user).toBe('ignored');
  });

  it('passes the user the openai SDK sends (chat, embeddings and responses)', async () => {
    const app = build();
    const key = app.issueKey('sdk-user', { limits: [] });
    const client = new OpenAI({
      baseURL: 'http://tollgate.test/v1',
      apiKey: key,
      maxRetries: 0,
      fetch: (url, init) => Promise.resolve(app.app.request(String(url), init as RequestInit)),
    });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], user: 'u-chat' });
    await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hi', user: 'u-embed' });
    await client.responses.create({ model: 'gpt-4o-mini', input: 'hi', user: 'u-resp', store: false });
    await flushed(app);
    expect(rows(app).map((row) => row.end_user)).toEqual(['u-chat', 'u-embed', 'u-resp']);
  });
});

describe('bad input', () => {
  it.each([
    ['a space in the header', {}, { 'x-tollgate-user': 'alice smith' }, 'x-tollgate-user'],
    ['a header user over 128 characters', {}, { 'x-tollgate-user': 'u'.repeat(129) }, 'x-tollgate-user'],
    ['a user that is not a string', { user: 42 }, {}, 'user'],
    ['a brace in the header user (it would split a Redis hash tag)', {}, { 'x-tollgate-user': 'a{b}' }, 'x-tollgate-user'],
    ['a tag with a space', {}, { 'x-tollgate-tags': 'ok,not ok' }, 'x-tollgate-tags'],
    ['eleven tags', {}, { 'x-tollgate-tags': 'a,b,c,d,e,f,g,h,i,j,k' }, 'x-tollgate-tags'],
    ['a tag of 65 characters', {}, { 'x-tollgate-tags': 't'.repeat(65) }, 'x-tollgate-tags'],
    ['metadata.tags that is not a string', { metadata: { tags: ['a'] } }, {}, 'metadata.tags'],
  ])('refuses %s with a 400 naming the field, and records the refusal', async (_name, body, headers, param) => {
    const app = build();
    const key = app.issueKey('strict', { limits: [] });
    const res = await chat(app, key, body, headers);
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { code: string; param: string; message: string } }).error;
    expect(error.param).toBe(param);
    expect(error.code).toMatch(/^invalid_(value|type)$/);
    expect(rows(app)).toMatchObject([{ status: 'invalid_request', end_user: null }]);
  });
});

describe('per-end-user limits', () => {
  it("gives every end user its own buckets: one user's 429 leaves the others alone", async () => {
    clock = 0;
    const app = build();
    const key = app.issueKey('per-user-rpm', { limits: [parseLimit('requests:100/min')], endUser: { limits: [parseLimit('requests:2/min')] } });
    const results = await settle([
      chat(app, key, { user: 'alice' }),
      chat(app, key, { user: 'alice' }),
      chat(app, key, { user: 'alice' }),
      chat(app, key, { user: 'bob' }),
      chat(app, key, { user: 'bob' }),
      chat(app, key),
      chat(app, key),
      chat(app, key),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 429, 200, 200, 200, 200, 200]);
    const refused = await chat(app, key, { user: 'alice' });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('end user "alice" limit');
    clock += 30_000; // half a minute refills one request
    expect((await chat(app, key, { user: 'alice' })).status).toBe(200);
  });
});

describe('per-end-user budgets', () => {
  const BUDGET = 150; // µUSD a day: about four requests of 50 completion tokens on gpt-4o-mini

  it("holds each user's cap under concurrent requests, leaves other users unaffected, and resets with the period", async () => {
    wall = Date.parse('2026-11-21T12:00:00Z');
    const app = build();
    const policy: Policy = { limits: [], endUser: { limits: [], budgets: [{ microUsd: BUDGET, period: 'day' }] } };
    const key = app.issueKey('per-user-budget', policy);
    const users = ['alice', 'bob', 'carol'];
    const burst = users.flatMap((user) => Array.from({ length: 12 }, () => chat(app, key, { user })));
    const results = await settle(burst);
    await flushed(app);
    const spend = ledgerSpendBy(app, 'end_user');
    for (const [i, user] of users.entries()) {
      const mine = results.slice(i * 12, i * 12 + 12);
      expect(spend.get(user)).toBeLessThanOrEqual(BUDGET);
      expect(spend.get(user)).toBeGreaterThan(BUDGET / 2);
      expect(mine.filter((r) => r.status === 200).length).toBeGreaterThan(0);
      expect(mine.filter((r) => r.status === 429).every((r) => r.code === 'insufficient_quota')).toBe(true);
      expect(mine.some((r) => r.status === 429)).toBe(true);
    }
    // Someone new, and the key's own requests without a user, are untouched by the others' budgets.
    expect((await chat(app, key, { user: 'dave' })).status).toBe(200);
    expect((await chat(app, key)).status).toBe(200);
    const refused = await chat(app, key, { user: 'alice' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('end user "alice"');
    // The next day is a new period for every user.
    wall = Date.parse('2026-11-22T00:00:01Z');
    expect((await chat(app, key, { user: 'alice' })).status).toBe(200);
  });

  it('caps a tag’s spend across every user of the key, and only requests with that tag', async () => {
    wall = Date.parse('2026-11-21T12:00:00Z');
    const app = build();
    const key = app.issueKey('tagged', { limits: [], tagBudgets: [{ tag: 'search', microUsd: BUDGET, period: 'day' }] });
    const results = await settle(Array.from({ length: 12 }, (_, i) => chat(app, key, { user: `u${i}` }, { 'x-tollgate-tags': 'search,web' })));
    await flushed(app);
    const tagged = rows(app).filter((row) => row.tags === 'search,web');
    const spent = tagged.reduce((sum, row) => sum + (row.status === 'pending' ? row.est_cost_micros : (row.cost_micros ?? 0)), 0);
    expect(spent).toBeLessThanOrEqual(BUDGET);
    expect(results.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    expect((await chat(app, key, {}, { 'x-tollgate-tags': 'web' })).status).toBe(200);
    expect((await chat(app, key, {}, { 'x-tollgate-tags': 'search' })).status).toBe(429);
  });
});

describe('reports', () => {
  it('spend by user and by tag equals the ledger, and by user sums to the total', async () => {
    wall = Date.parse('2026-11-21T12:00:00Z');
    const app = build();
    const key = app.issueKey('reported', { limits: [] });
    const other = app.issueKey('reported-too', { limits: [] });
    await settle([
      chat(app, key, { user: 'alice' }, { 'x-tollgate-tags': 'a,b' }),
      chat(app, key, { user: 'alice', max_tokens: 20 }, { 'x-tollgate-tags': 'a' }),
      chat(app, key, { user: 'bob' }),
      chat(app, key),
      chat(app, other, { user: 'alice' }, { 'x-tollgate-tags': 'b' }),
      chat(app, key, { user: 'bob' }, { 'x-tollgate-user': 'bad user' }),
    ]);
    await flushed(app);
    const ledger = rows(app);
    const byUser = querySpend(app.db.database, { since: '2026-11-21', by: 'user' }, wall);
    const ids = app.db.database.sqlite.prepare('SELECT id, name FROM api_keys').all() as Array<{ id: string; name: string }>;
    const nameOf = new Map(ids.map((k) => [k.id, k.name]));
    const keyOf = new Map(
      (app.db.database.sqlite.prepare('SELECT request_id, key_id FROM ledger').all() as Array<{ request_id: string; key_id: string }>).map((r) => [
        r.request_id,
        r.key_id,
      ]),
    );
    const expected = new Map<string, { cost: number; requests: number }>();
    for (const row of ledger) {
      const group = row.end_user === null ? '(no end user)' : `${row.end_user}|${nameOf.get(keyOf.get(row.request_id)!)}`;
      const entry = expected.get(group) ?? { cost: 0, requests: 0 };
      entry.cost += row.cost_micros ?? 0;
      // The rollups count admitted requests; refusals are counted apart (here: one 400 for a bad user).
      if (row.status !== 'invalid_request' && row.status !== 'rejected') entry.requests += 1;
      expected.set(group, entry);
    }
    const reported = new Map(
      byUser.rows.map((row) => [row.key === undefined ? row.group : `${row.group}|${row.key}`, { cost: row.costMicros, requests: row.requests }]),
    );
    expect(reported).toEqual(expected);
    expect(byUser.rows.reduce((sum, row) => sum + row.costMicros, 0)).toBe(byUser.total.costMicros);

    const byTag = querySpend(app.db.database, { since: '2026-11-21', by: 'tag' }, wall);
    const tagCost = new Map<string, number>();
    for (const row of ledger) {
      for (const tag of row.tags?.split(',') ?? []) {
        const group = `${tag}|${nameOf.get(keyOf.get(row.request_id)!)}`;
        tagCost.set(group, (tagCost.get(group) ?? 0) + (row.cost_micros ?? 0));
      }
    }
    expect(new Map(byTag.rows.map((row) => [`${row.group}|${row.key}`, row.costMicros]))).toEqual(tagCost);

    // The admin API serves the same report (and its CSV).
    const keyId = ids.find((k) => k.name === 'reported')!.id;
    const scoped = querySpend(app.db.database, { keyId, since: '2026-11-21', by: 'user' }, wall);
    expect(scoped.rows.map((row) => row.group).sort()).toEqual(['(no end user)', 'alice', 'bob']);

    // The spend CSV names the key beside each user; the ledger export carries each row's user and tags.
    expect(csvObjects(spendReportCsv(byUser)).find((row) => row.user === 'bob')).toMatchObject({ key_prefix: expect.stringMatching(/^tg-/) });
    let exported = '';
    for await (const chunk of ledgerExporter(sqliteLedgerExport(app.db.path))({ sinceMs: 0, untilMs: wall + 86_400_000 }, 'csv')) exported += chunk;
    const records = csvObjects(exported);
    expect(records.map((row) => [row.end_user, row.tags])).toEqual(ledger.map((row) => [row.end_user ?? '', row.tags ?? '']));
  });
});
