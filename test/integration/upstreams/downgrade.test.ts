/**
 * Budget-aware downgrade, end to end: a key made with `tollgate keys create
 * --downgrade gpt-4o=gpt-4o-mini --downgrade-at 50` gets gpt-4o until half its
 * budget is spent, then gpt-4o-mini — sent, billed and recorded as such, with
 * `x-tollgate-downgraded: gpt-4o->gpt-4o-mini` on the response. The admin API
 * sets and removes it too.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type TollgateDatabase } from '../../../src/storage/sqlite/open.js';
import { cli } from '../../support/cli.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

const ADMIN = 'admin-token-0123456789abcdef';
let proxy: TestProxy;
let database: TollgateDatabase;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  database = openDatabase(proxy.dbPath);
});
afterAll(async () => {
  database.close();
  await proxy.close();
});

const messages = [{ role: 'user' as const, content: 'Say something long.' }];
const settled = () =>
  waitFor(() => (database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status = 'pending'").get() as { n: number }).n === 0, 'settled rows');

describe('budget-aware downgrade', () => {
  it('sends requests for gpt-4o to gpt-4o-mini once half the budget is spent, and says so', async () => {
    const created = await cli(
      '--db',
      proxy.dbPath,
      'keys',
      'create',
      '--name',
      'downgrader',
      '--budget-usd',
      '0.05',
      '--budget-period',
      'day',
      '--downgrade',
      'gpt-4o=gpt-4o-mini',
      '--downgrade-at',
      '50',
      '--json',
    );
    expect(created.code).toBe(0);
    const issued = created.json<{ key: string; policy: { downgrade: unknown } }>();
    expect(issued.policy.downgrade).toEqual({ atPercent: 50, models: { 'gpt-4o': 'gpt-4o-mini' } });
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: issued.key, maxRetries: 0 });
    const shown = await cli('--db', proxy.dbPath, 'keys', 'show', 'downgrader');
    expect(shown.stdout).toMatch(/downgrade\s+at 50% of a budget: gpt-4o -> gpt-4o-mini/);

    await waitFor(
      async () => (await fetch(`${proxy.baseURL}/models`, { headers: { authorization: `Bearer ${issued.key}` } })).status === 200,
      'the key to reach the proxy',
    );
    const before = proxy.fake.requests.length;
    // Below the threshold: gpt-4o as asked (≈3000 output tokens ≈ $0.03, past half of $0.05).
    const first = await client.chat.completions.create({ model: 'gpt-4o', messages }, { headers: { 'x-fake-scenario': 'words=3000' } }).withResponse();
    expect(first.response.headers.get('x-tollgate-downgraded')).toBeNull();
    expect(first.data.model).toBe('gpt-4o');
    await settled();

    const second = await client.chat.completions.create({ model: 'gpt-4o', messages }).withResponse();
    expect(second.response.headers.get('x-tollgate-downgraded')).toBe('gpt-4o->gpt-4o-mini');
    expect(second.data.model).toBe('gpt-4o-mini');
    expect(proxy.fake.requests.slice(before).map((r) => (r.body as { model: string }).model)).toEqual(['gpt-4o', 'gpt-4o-mini']);
    await settled();
    const row = database.sqlite.prepare('SELECT model, status FROM ledger WHERE request_id = ?').get(second.response.headers.get('x-request-id')) as {
      model: string;
    };
    expect(row.model).toBe('gpt-4o-mini');

    // Models it does not name are never downgraded.
    const other = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages }).withResponse();
    expect(other.response.headers.get('x-tollgate-downgraded')).toBeNull();
  });

  it('sends dated snapshots of gpt-4o to gpt-4o-mini too, as the price table names them', async () => {
    const created = await cli(
      '--db',
      proxy.dbPath,
      'keys',
      'create',
      '--name',
      'dated-downgrader',
      '--budget-usd',
      '0.05',
      '--budget-period',
      'day',
      '--downgrade',
      'gpt-4o=gpt-4o-mini',
      '--downgrade-at',
      '50',
      '--json',
    );
    expect(created.code).toBe(0);
    const key = created.json<{ key: string }>().key;
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: key, maxRetries: 0 });
    await waitFor(
      async () => (await fetch(`${proxy.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } })).status === 200,
      'the key to reach the proxy',
    );
    const before = proxy.fake.requests.length;
    // Past half the budget with a dated snapshot (≈3000 output tokens ≈ $0.03 of $0.05).
    const first = await client.chat.completions
      .create({ model: 'gpt-4o-2024-08-06', messages }, { headers: { 'x-fake-scenario': 'words=3000' } })
      .withResponse();
    expect(first.response.headers.get('x-tollgate-downgraded')).toBeNull();
    await settled();

    for (const dated of ['gpt-4o-2024-08-06', 'gpt-4o-2024-11-20', 'openai/gpt-4o']) {
      const later = await client.chat.completions.create({ model: dated, messages }).withResponse();
      expect(later.response.headers.get('x-tollgate-downgraded'), dated).toBe(`${dated}->gpt-4o-mini`);
      expect(later.data.model).toBe('gpt-4o-mini');
    }
    expect(proxy.fake.requests.slice(before).map((r) => (r.body as { model: string }).model)).toEqual([
      'gpt-4o-2024-08-06',
      'gpt-4o-mini',
      'gpt-4o-mini',
      'gpt-4o-mini',
    ]);
    // gpt-4o-mini's own snapshots are another model: not downgraded (nor re-routed).
    const mini = await client.chat.completions.create({ model: 'gpt-4o-mini-2024-07-18', messages }).withResponse();
    expect(mini.response.headers.get('x-tollgate-downgraded')).toBeNull();
  });

  it('is set and removed through the admin API and the CLI', async () => {
    const made = await cli('--db', proxy.dbPath, 'keys', 'create', '--name', 'plain', '--json');
    const id = made.json<{ id: string }>().id;
    const patch = (body: unknown) =>
      fetch(`${proxy.server.url}/admin/api/keys/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const set = await patch({ downgrade: { atPercent: 80, models: { o3: 'o4-mini' } } });
    expect(set.status).toBe(200);
    expect(((await set.json()) as { policy: { downgrade: unknown } }).policy.downgrade).toEqual({ atPercent: 80, models: { o3: 'o4-mini' } });
    const bad = await patch({ downgrade: { atPercent: 150, models: { o3: 'o4-mini' } } });
    expect(bad.status).toBe(400);
    const moved = await cli('--db', proxy.dbPath, 'keys', 'update', 'plain', '--downgrade-at', '90', '--json');
    expect(moved.json<{ policy: { downgrade: unknown } }>().policy.downgrade).toEqual({ atPercent: 90, models: { o3: 'o4-mini' } });
    const removed = await cli('--db', proxy.dbPath, 'keys', 'update', 'plain', '--no-downgrade', '--json');
    expect(removed.json<{ policy: { downgrade?: unknown } }>().policy.downgrade).toBeUndefined();
    const wrong = await cli('--db', proxy.dbPath, 'keys', 'update', 'plain', '--downgrade', 'gpt-4o');
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/--downgrade takes FROM=TO pairs/);
  });
});
