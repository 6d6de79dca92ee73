/**
 * Spend and ledger exports on a real Tollgate (real SQLite file, real HTTP,
 * the CLI on the same file and through --url): the CSV reads back to
 * `tollgate spend --json`'s totals, the ledger exports carry every row once,
 * hostile text never becomes a spreadsheet formula, and all of it needs the
 * admin token or the dashboard's session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { openDatabase, type TollgateDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import type { KeyView } from '../../../src/domain/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { usdToMicros } from '../../../src/domain/money.js';
import type { SpendReport } from '../../../src/storage/spend-reads.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';
import { csvObjects, parseCsv } from '../../support/csv.js';

const ADMIN = 'exports-admin-token-0123456789';
const SINCE = '2026-11-01';
const UNTIL = '2026-11-03';
const HOSTILE_MODELS = [
  '=HYPERLINK("http://evil.example","click")',
  '+1+cmd|/C calc!A0',
  '-2+3',
  '@SUM(A1:A9)',
  'tab\there',
  'line\r\nbreak',
  'comma, "quoted"',
  ' =padded',
];
const MODELS = ['gpt-4o', 'gpt-4o-mini', ...HOSTILE_MODELS];

let proxy: TestProxy;
let database: TollgateDatabase;
let alpha: KeyView;
let beta: KeyView;

const get = (path: string, token: string | null = ADMIN) =>
  fetch(`${proxy.server.url}/admin/api${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
const text = async (path: string) => {
  const response = await get(path);
  expect(response.status).toBe(200);
  return response.text();
};
const period = `since=${SINCE}&until=${UNTIL}`;
const micros = (usd: string) => {
  const value = usdToMicros(usd);
  if (value === null) throw new Error(`not an exact USD amount: ${usd}`);
  return value;
};
const periodMs = [Date.parse(`${SINCE}T00:00:00Z`), Date.parse(`${UNTIL}T00:00:00Z`) + 86_400_000] as const;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  // Rows written by the real LedgerWriter on its own connection to the proxy's file, as a second process would.
  database = openDatabase(proxy.dbPath);
  const store = new KeyStore(database);
  alpha = store.createKey({ name: 'alpha', tenant: 'acme', policy: { limits: [] } }).view;
  beta = store.createKey({ name: 'beta', policy: { limits: [] } }).view;
  const writer = new SqliteLedgerWriter(database);
  for (let i = 0; i < 60; i += 1) {
    const key = i % 3 === 0 ? beta : alpha;
    const createdAt = Date.parse(`2026-11-0${1 + (i % 3)}T${String(i % 24).padStart(2, '0')}:15:00Z`);
    await writer.begin({
      requestId: `exp-${i}`,
      keyId: key.id,
      tenantId: key.tenantId,
      createdAt,
      endpoint: 'chat',
      model: MODELS[i % MODELS.length]!,
      stream: i % 2 === 0,
      estPromptTokens: 100,
      estCompletionTokens: 50,
      estCostMicros: 1_000 + i,
      priceKnown: i % 5 !== 0,
    });
    // The last one stays pending: exported at its estimate, counted in the totals at it.
    if (i === 59) continue;
    writer.complete({
      requestId: `exp-${i}`,
      completedAt: createdAt + 1_500,
      status: i % 7 === 0 ? 'upstream_error' : 'ok',
      httpStatus: i % 7 === 0 ? 500 : 200,
      promptTokens: 100 + i,
      cachedTokens: i % 4,
      completionTokens: 10 * i,
      reasoningTokens: 0,
      costMicros: i % 7 === 0 ? 0 : 123_457 * i + 1,
      usageSource: i % 7 === 0 ? 'none' : 'reported',
      latencyMs: 1_500,
      ttftMs: i % 2 === 0 ? 200 : null,
      upstreamRequestId: i % 11 === 0 ? '=upstream-id' : `req_${i}`,
      errorCode: i % 7 === 0 ? '@err' : null,
    });
  }
  writer.close();
  // One more hostile model, through the proxy itself: refused (400, the name is not a model name) and
  // recorded as a refusal row, which the ledger export must still defuse.
  const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
  await expect(
    client.chat.completions.create({ model: '=HYPERLINK("http://evil.example")', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
  ).rejects.toMatchObject({ status: 400 });
});
afterAll(async () => {
  database.close();
  await proxy.close();
});

describe('spend as CSV', () => {
  it('reads back (CLI and HTTP alike) to the totals of tollgate spend --json, for every grouping', async () => {
    for (const by of ['day', 'model', 'key', 'tenant', 'total'] as const) {
      const args = ['--db', proxy.dbPath, 'spend', '--since', SINCE, '--until', UNTIL, '--by', by];
      const report = (await cli(...args, '--json')).json<SpendReport>();
      const fromCli = await cli(...args, '--format', 'csv');
      expect(fromCli.code).toBe(0);
      const response = await get(`/spend.csv?${period}&by=${by}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/csv; charset=utf-8/);
      expect(response.headers.get('content-disposition')).toBe(`attachment; filename="tollgate-spend-${by}-${SINCE}-${UNTIL}.csv"`);
      const csv = await response.text();
      expect(csv).toBe(fromCli.stdout);

      const rows = csvObjects(csv);
      expect(rows).toHaveLength(by === 'total' ? 1 : report.rows.length);
      expect(rows.reduce((sum, row) => sum + micros(row.cost_usd!), 0)).toBe(report.total.costMicros);
      expect(rows.reduce((sum, row) => sum + Number(row.requests), 0)).toBe(report.total.requests);
      expect(rows.reduce((sum, row) => sum + Number(row.completion_tokens), 0)).toBe(report.total.completionTokens);
      expect(rows.every((row) => row.since === SINCE && row.until === UNTIL)).toBe(true);
      if (by === 'key') expect(rows.map((row) => row.key_id)).toEqual(report.rows.map((row) => row.keyId));
    }
    // The pending row is in the totals at its estimate, as in tollgate spend.
    expect(micros(csvObjects(await text(`/spend.csv?${period}&by=total`))[0]!.cost_usd!)).toBeGreaterThan(0);
  });

  it('answers bad parameters with an OpenAI-shaped 400', async () => {
    const bad = await get(`/spend.csv?by=nonsense`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('by');
    expect((await cli('--db', proxy.dbPath, 'spend', '--format', 'xml')).code).toBe(2);
  });
});

describe('ledger exports', () => {
  const ledgerCount = (extra = '', params: unknown[] = []) =>
    (database.sqlite.prepare(`SELECT count(*) AS n FROM ledger WHERE created_at >= ? AND created_at < ? ${extra}`).get(...periodMs, ...params) as { n: number })
      .n;

  it('NDJSON has one line per ledger row of the period, the same from the API, the CLI and the CLI through --url', async () => {
    const ndjson = await text(`/ledger.ndjson?${period}`);
    const lines = ndjson.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(ledgerCount());
    expect(lines).toHaveLength(60);
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(new Set(records.map((r) => r.request_id)).size).toBe(60);
    const settled = database.sqlite
      .prepare(`SELECT coalesce(sum(cost_micros), 0) AS cost FROM ledger WHERE created_at >= ? AND created_at < ? AND status != 'pending'`)
      .get(...periodMs) as { cost: number };
    expect(records.reduce((sum, r) => sum + (r.cost_usd === null ? 0 : micros(r.cost_usd as string)), 0)).toBe(settled.cost);
    const pending = records.find((r) => r.request_id === 'exp-59')!;
    expect(pending).toMatchObject({ status: 'pending', cost_usd: null, est_cost_usd: '0.001059', completed_at: null, key_name: 'alpha', tenant_name: 'acme' });
    expect(records.find((r) => r.request_id === 'exp-3')).toMatchObject({
      created_at: '2026-11-01T03:15:00.000Z',
      completed_at: '2026-11-01T03:15:01.500Z',
      cost_usd: '0.370372',
      stream: false,
      price_known: true,
      key_id: beta.id,
      tenant_id: null,
    });

    expect((await cli('--db', proxy.dbPath, 'ledger', 'export', '--since', SINCE, '--until', UNTIL, '--format', 'ndjson')).stdout).toBe(ndjson);
    const remote = await cli('--url', proxy.server.url, '--admin-token', ADMIN, 'ledger', 'export', '--since', SINCE, '--until', UNTIL, '--format', 'ndjson');
    expect(remote.code).toBe(0);
    expect(remote.stdout).toBe(ndjson);
  });

  it('CSV has the same rows and columns, filters by key and tenant, and holds no key material', async () => {
    const csv = await text(`/ledger.csv?${period}`);
    const rows = csvObjects(csv);
    expect(rows).toHaveLength(60);
    const ndjsonFirst = JSON.parse((await text(`/ledger.ndjson?${period}`)).split('\n')[0]!) as Record<string, unknown>;
    expect(parseCsv(csv)[0]).toEqual(Object.keys(ndjsonFirst));
    expect((await cli('--db', proxy.dbPath, 'ledger', 'export', '--since', SINCE, '--until', UNTIL)).stdout).toBe(csv);

    const byKey = csvObjects(await text(`/ledger.csv?${period}&key=alpha`));
    expect(byKey).toHaveLength(ledgerCount('AND key_id = ?', [alpha.id]));
    expect(byKey.every((row) => row.key_name === 'alpha')).toBe(true);
    // One key's rows come in time order (its index).
    expect(byKey.map((row) => row.created_at)).toEqual(byKey.map((row) => row.created_at).sort());
    const cliByKey = await cli('--db', proxy.dbPath, 'ledger', 'export', '--since', SINCE, '--until', UNTIL, '--key', alpha.prefix, '--format', 'ndjson');
    expect(cliByKey.stdout.trimEnd().split('\n')).toHaveLength(byKey.length);
    expect(csvObjects(await text(`/ledger.csv?${period}&tenant=acme`))).toHaveLength(ledgerCount('AND tenant_id = ?', [alpha.tenantId]));
    // An instant range: half-open, to the millisecond.
    const at = async (since: string, until: string) => csvObjects(await text(`/ledger.csv?since=${since}&until=${until}`)).map((row) => row.request_id);
    expect(await at('2026-11-01T03:15:00Z', '2026-11-01T03:15:00.001Z')).toEqual(['exp-3', 'exp-27', 'exp-51']);
    expect(await at('2026-11-01T03:14:00Z', '2026-11-01T03:15:00Z')).toEqual([]);

    const hashes = (database.sqlite.prepare('SELECT key_hash FROM api_keys').all() as Array<{ key_hash: string }>).map((r) => r.key_hash);
    expect(hashes.length).toBeGreaterThan(0);
    for (const hash of hashes) expect(csv).not.toContain(hash);
    expect(parseCsv(csv)[0]!.some((column) => /hash|secret/.test(column))).toBe(false);
  });

  it('refuses unknown keys and bad periods before sending anything', async () => {
    const unknown = await get(`/ledger.csv?${period}&key=nobody`);
    expect(unknown.status).toBe(404);
    const empty = await get(`/ledger.ndjson?since=${UNTIL}&until=${SINCE}`);
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: { code: string } }).error.code).toBe('invalid_value');
    const cliUnknown = await cli('--db', proxy.dbPath, 'ledger', 'export', '--key', 'nobody');
    expect(cliUnknown.code).toBe(1);
    expect(cliUnknown.stderr).toContain('no key "nobody"');
    expect((await cli('--db', proxy.dbPath, 'ledger', 'export', '--since', 'someday')).code).toBe(2);
  });
});

describe('formula injection', () => {
  const textCells = (csv: string) => parseCsv(csv).flat();

  it('no cell of any export starts a formula or holds a control character; hostile text arrives defused', async () => {
    const exports = [
      await text(`/ledger.csv?${period}`),
      await text(`/spend.csv?${period}&by=model`),
      await text(`/ledger.csv?since=2d`),
      await text(`/spend.csv?since=2d&by=model`),
    ];
    for (const csv of exports) {
      for (const cell of textCells(csv)) {
        // eslint-disable-next-line no-control-regex
        expect(cell).not.toMatch(/[\u0000-\u001f\u007f]/);
        // Numbers are ours and never negative here; anything else starting = + - @ would run in a spreadsheet.
        expect(cell).not.toMatch(/^\s*[=+\-@]/);
      }
    }
    const models = new Set(csvObjects(exports[0]!).map((row) => row.model));
    expect(models).toContain(`'=HYPERLINK("http://evil.example","click")`);
    expect(models).toContain("'+1+cmd|/C calc!A0");
    expect(models).toContain("'-2+3");
    expect(models).toContain("'@SUM(A1:A9)");
    expect(models).toContain('tab here');
    expect(models).toContain('line  break');
    expect(models).toContain('comma, "quoted"');
    expect(models).toContain("' =padded");
    expect(csvObjects(exports[0]!).some((row) => row.upstream_request_id === "'=upstream-id" && row.error_code === '')).toBe(true);
    expect(csvObjects(exports[0]!).some((row) => row.error_code === "'@err")).toBe(true);
    // The name sent through the proxy is not stored at all: its refusal row says (invalid).
    expect(csvObjects(exports[2]!).map((row) => row.model)).toContain('(invalid)');
    // NDJSON is data, not a spreadsheet: the text is kept as it was.
    expect((await text(`/ledger.ndjson?${period}`)).split('\n').some((line) => line.includes('"model":"=HYPERLINK'))).toBe(true);
  });
});

describe('access', () => {
  const paths = [`/spend.csv?${period}`, `/ledger.csv?${period}`, `/ledger.ndjson?${period}`];

  it('needs the admin token', async () => {
    for (const path of paths) {
      for (const token of [null, 'not-the-admin-token-at-all']) {
        const response = await get(path, token);
        expect(response.status).toBe(401);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_admin_token');
      }
    }
    const remote = await cli('--url', proxy.server.url, '--admin-token', 'not-the-admin-token-at-all', 'ledger', 'export', '--since', SINCE);
    expect(remote.code).toBe(1);
    expect(remote.stderr).toContain('admin token');
  });

  it("or the dashboard's session, whose overview links the downloads", async () => {
    const login = await fetch(`${proxy.server.url}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: ADMIN, next: '/dashboard' }).toString(),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await fetch(`${proxy.server.url}/dashboard`, { headers: { cookie } })).text();
    const links = [...page.matchAll(/href="(\/admin\/api\/(?:spend|ledger)\.csv[^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
    expect(links).toEqual([
      '/admin/api/spend.csv?since=month&by=day',
      '/admin/api/spend.csv?since=month&by=key',
      '/admin/api/spend.csv?since=month&by=model',
      '/admin/api/ledger.csv?since=month',
    ]);
    for (const link of links) {
      const response = await fetch(`${proxy.server.url}${link}`, { headers: { cookie } });
      expect(response.status).toBe(200);
      expect(parseCsv(await response.text()).length).toBeGreaterThan(0);
    }
  });
});
