/**
 * Agent sessions as an operator reads them, on one node: a key with a
 * per-session budget holds each session to it under 20 concurrent requests
 * (the other session unaffected), and `tollgate spend --by session` (table,
 * JSON, CSV), the admin API's spend by session and the key's dashboard page
 * list the same sessions with their spend, duration and requests.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import Database from 'better-sqlite3';
import { cli } from '../../support/cli.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';
import type { SpendReport } from '../../../src/storage/spend-reads.js';
import type { KeyPageView } from '../../../src/dashboard/key-view.js';
import { usd } from '../../../src/dashboard/format.js';

const ADMIN = 'sessions-admin-token-0123456789abcdef';
/** µUSD per session: three 60-token gpt-4o-mini answers fit, a fourth does not. */
const BUDGET = 120;
const CLAUDE = 'c0ffee00-1111-4222-8333-444455556666';
const CODEX = '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

let proxy: TestProxy;
let key: string;
let keyId: string;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  const created = await cli('--db', proxy.dbPath, 'keys', 'create', '--name', 'agents', '--session-budget-usd', '0.00012', '--json');
  expect(created.code, created.stderr).toBe(0);
  ({ key, id: keyId } = created.json<{ key: string; id: string }>());
}, 60_000);

afterAll(async () => {
  await proxy?.close();
});

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return '200';
  } catch (error) {
    if (error instanceof OpenAI.APIError && error.status !== undefined) return `${error.status} ${String(error.code)}`;
    throw error;
  }
}

function ask(headers: Record<string, string>): Promise<string> {
  const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-fake-scenario': 'words=1000', ...headers } });
  return outcome(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 60 }));
}

async function spendBySession(): Promise<SpendReport> {
  const result = await cli('--db', proxy.dbPath, 'spend', '--key', 'agents', '--since', 'today', '--by', 'session', '--json');
  expect(result.code, result.stderr).toBe(0);
  return result.json<SpendReport>();
}

it('holds every session to its budget under concurrent requests, and lists sessions with spend, duration and requests everywhere', async () => {
  const claude = await Promise.all(Array.from({ length: 20 }, () => ask({ 'x-claude-code-session-id': CLAUDE })));
  const codex = await Promise.all(Array.from({ length: 20 }, () => ask({ 'session-id': CODEX, originator: 'codex_exec' })));
  for (const statuses of [claude, codex]) {
    const admitted = statuses.filter((status) => status === '200').length;
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(3);
    expect(statuses).toContain('429 insufficient_quota');
  }
  await waitFor(async () => (await spendBySession()).pending === 0, 'every request to settle');

  const report = await spendBySession();
  expect(report.rows.map((row) => row.group).sort()).toEqual([CODEX, CLAUDE].sort());
  for (const row of report.rows) {
    expect(row.costMicros).toBeGreaterThan(0);
    expect(row.costMicros).toBeLessThanOrEqual(BUDGET);
    expect(row.key).toBe('agents');
    expect(row.requests).toBeGreaterThan(0);
    expect(row.rejectedBudget).toBe(20 - row.requests);
    expect(row.lastAt).toBeGreaterThanOrEqual(row.firstAt!);
  }

  // The table names the key and the duration beside each session.
  const table = await cli('--db', proxy.dbPath, 'spend', '--since', 'today', '--by', 'session');
  expect(table.code, table.stderr).toBe(0);
  expect(table.stdout).toMatch(/session\s+key\s+duration\s+requests/);
  for (const session of [CLAUDE, CODEX]) expect(table.stdout).toMatch(new RegExp(`${session}\\s+agents\\s+\\d+s\\s+\\d+`));

  // CSV: the first and last request and the duration in seconds.
  const csv = await cli('--db', proxy.dbPath, 'spend', '--since', 'today', '--by', 'session', '--format', 'csv');
  expect(csv.code, csv.stderr).toBe(0);
  const [header, ...records] = csv.stdout.trim().split('\r\n');
  expect(header).toBe(
    'since,until,session,key_id,key_prefix,first_request_at,last_request_at,duration_seconds,requests,prompt_tokens,cached_tokens,completion_tokens,reasoning_tokens,cost_usd,errors,rejected_rate_limit,rejected_budget',
  );
  expect(records).toHaveLength(2);
  for (const record of records)
    expect(record).toMatch(/^\d{4}-\d{2}-\d{2},\d{4}-\d{2}-\d{2},[^,]+,[^,]+,[^,]+,\d{4}-\d{2}-\d{2}T[^,]+Z,\d{4}-\d{2}-\d{2}T[^,]+Z,\d+,/);

  // The admin API answers the same rows.
  const api = (await (
    await fetch(`${proxy.server.url}/admin/api/spend?by=session&since=today`, { headers: { authorization: `Bearer ${ADMIN}` } })
  ).json()) as SpendReport;
  expect(api.rows.map((row) => [row.group, row.costMicros, row.requests])).toEqual(report.rows.map((row) => [row.group, row.costMicros, row.requests]));

  // The key's dashboard page lists the sessions, the most spent first, with their spend, duration and requests.
  const page = (await (
    await fetch(`${proxy.server.url}/admin/api/dashboard/keys/${keyId}`, { headers: { authorization: `Bearer ${ADMIN}` } })
  ).json()) as KeyPageView;
  expect(page.topSessions.map((item) => [item.name, item.text.spend, item.text.requests])).toEqual(
    report.rows.map((row) => [row.group, usd(row.costMicros), String(row.requests)]),
  );
  for (const item of page.topSessions) expect(item.text.duration).toMatch(/^\d+s$|^\d+m \d{2}s$/);
  // Its JSON list of sessions, a page at a time.
  const list = (await (
    await fetch(`${proxy.server.url}/admin/api/dashboard/keys/${keyId}/sessions?limit=1`, { headers: { authorization: `Bearer ${ADMIN}` } })
  ).json()) as { data: Array<{ name: string; firstAt: number; lastAt: number }>; hasMore: boolean };
  expect(list.data.map((row) => row.name)).toEqual([report.rows[0]!.group]);
  expect(list.data[0]!.lastAt).toBeGreaterThanOrEqual(list.data[0]!.firstAt);
  expect(list.hasMore).toBe(true);
  const login = await fetch(`${proxy.server.url}/dashboard/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: ADMIN, next: '/dashboard' }),
    redirect: 'manual',
  });
  const cookie = login.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
  const html = await (await fetch(`${proxy.server.url}/dashboard/keys/${keyId}`, { headers: { cookie } })).text();
  expect(html).toContain('Agent sessions');
  for (const session of [CLAUDE, CODEX]) expect(html).toContain(session);
}, 90_000);

it('records the session of a request refused before its body was read', async () => {
  const response = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-claude-code-session-id': 'broken-body-run' },
    body: '{"model": "gpt-4o-mini", "messages": [',
  });
  expect(response.status).toBe(400);
  await waitFor(() => {
    const db = new Database(proxy.dbPath, { readonly: true });
    try {
      return db.prepare("SELECT status FROM ledger WHERE session = 'broken-body-run'").all().length === 1;
    } finally {
      db.close();
    }
  }, 'the refusal to be recorded under its session');
});
