/**
 * The per-day bound on a key's end users and tags through the HTTP API,
 * in-process against the fake upstream: a flood of requests the upstream
 * rejects, each with a fresh end user and ten fresh tags, ends with the
 * bound's rows plus `(other)`; on a key whose end users have budgets, a new
 * end user past the bound is refused with an OpenAI-shaped 429 and never
 * reaches the upstream.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { expectNamedRollupsEqualRows } from '../storage/rollup-checks.js';

let fake: FakeUpstream;
let upstream: Upstream;
let app: TestApp;
const BOUND = { users: 6, tags: 8 };

beforeAll(async () => {
  fake = await startFakeUpstream();
  upstream = createUpstream({ url: fake.url, apiKey: 'sk', connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 16 });
  app = buildTestApp({
    upstream,
    logger: captureLogs('silent').logger,
    env: { TOLLGATE_MAX_END_USERS: String(BOUND.users), TOLLGATE_MAX_TAGS: String(BOUND.tags) },
  });
});
afterAll(async () => {
  app.close();
  await upstream.close();
  await fake.close();
});

function chat(key: string, user: string, tags: readonly string[], scenario = 'words=5'): Promise<Response> {
  return Promise.resolve(
    app.app.request('http://tollgate.test/v1/chat/completions', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-fake-scenario': scenario,
        'x-tollgate-user': user,
        'x-tollgate-tags': tags.join(','),
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 20 }),
    }),
  );
}

function count(sql: string, ...params: unknown[]): number {
  return app.db.database.sqlite
    .prepare(sql)
    .pluck()
    .get(...params) as number;
}

it('bounds the rollup rows a flood of upstream-rejected requests with fresh users and ten fresh tags adds', async () => {
  const key = app.issueKey('flood');
  const keyId = app.store.getKey('flood').id;
  const sent = 4 * BOUND.users;
  const answers = await Promise.all(
    Array.from({ length: sent }, (_, i) =>
      chat(
        key,
        `victim-${i}`,
        Array.from({ length: 10 }, (_, t) => `t${i}-${t}`),
        // The upstream refuses every one (what a client sending bad requests gets).
        'status=400',
      ),
    ),
  );
  expect(answers.every((answer) => answer.status === 400)).toBe(true);
  app.ledger.flush();
  // Every request keeps its own raw row, with its own end user and tags…
  expect(count(`SELECT count(*) FROM ledger WHERE key_id = ? AND end_user LIKE 'victim-%'`, keyId)).toBe(sent);
  // …and the rollups hold the bound plus (other), counted.
  expect(count('SELECT count(*) FROM rollups_end_users WHERE key_id = ?', keyId)).toBe(BOUND.users + 1);
  expect(count('SELECT count(*) FROM rollups_tags WHERE key_id = ?', keyId)).toBe(BOUND.tags + 1);
  expect(count(`SELECT requests FROM rollups_end_users WHERE key_id = ? AND end_user = '(other)'`, keyId)).toBe(sent - BOUND.users);
  expect(count(`SELECT errors FROM rollups_end_users WHERE key_id = ? AND end_user = '(other)'`, keyId)).toBe(sent - BOUND.users);
  expectNamedRollupsEqualRows(app.db.database.sqlite);
});

it('refuses a new end user with its own budget past the bound, with an OpenAI-shaped 429, and still serves known ones', async () => {
  const key = app.issueKey('budgeted', { limits: [], endUser: { limits: [], budgets: [{ microUsd: 1_000_000, period: 'day' }] } });
  for (let i = 0; i < BOUND.users; i += 1) expect((await chat(key, `member-${i}`, [])).status).toBe(200);
  const before = fake.requests.length;
  const refused = await chat(key, 'newcomer', []);
  expect(refused.status).toBe(429);
  expect(refused.headers.get('x-should-retry')).toBe('false');
  const body = (await refused.json()) as { error: { type: string; code: string; param: string | null; message: string } };
  expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_end_users', param: 'user' });
  expect(body.error.message).toContain('TOLLGATE_MAX_END_USERS');
  expect(fake.requests.length).toBe(before);
  // An end user already seen today is served as before.
  expect((await chat(key, 'member-3', [])).status).toBe(200);
  app.ledger.flush();
  // The refusal is on the ledger as such (its end user counted under (other), as refusals never create rows).
  const keyId = app.store.getKey('budgeted').id;
  expect(count(`SELECT count(*) FROM ledger WHERE key_id = ? AND end_user = 'newcomer' AND status = 'rejected'`, keyId)).toBe(1);
  expect(count(`SELECT count(*) FROM rollups_end_users WHERE key_id = ? AND end_user = 'newcomer'`, keyId)).toBe(0);
  expectNamedRollupsEqualRows(app.db.database.sqlite);
});
