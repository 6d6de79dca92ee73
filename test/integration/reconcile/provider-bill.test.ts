/**
 * The ledger against the provider's own bill: three UTC days of real traffic
 * (JSON and streamed chats on two models, embeddings) through Tollgate with
 * the `openai` SDK, to a fake upstream that serves OpenAI's organization
 * Usage and Costs reports built from what it billed — with three deliberate
 * differences: a day missing from its reports, one model priced 1.5× the
 * table, and one request Tollgate never sent. `tollgate reconcile` must find
 * exactly those and nothing else, by day and model and by day, model and
 * project; the admin key never shows in what it prints or stores.
 */
import { openLedgerCells } from '../../../src/storage/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createUpstream } from '../../../src/upstreams/pool.js';
import { loadConfig } from '../../../src/config/index.js';
import { openAIUsageProvider } from '../../../src/reconcile/openai.js';
import { runReconcile, type ReconcileResult } from '../../../src/reconcile/run.js';
import { sqliteReconciliations } from '../../../src/storage/sqlite/reconciliations.js';
import { ProviderReportError } from '../../../src/reconcile/provider.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';
import { cli } from '../../support/cli.js';

const UPSTREAM_KEY = 'sk-test-upstream-reconcile-0123456789';
const ADMIN_KEY = 'sk-admin-reconcile-secret-9876543210';
const DAYS = ['2026-11-18', '2026-11-19', '2026-11-20'] as const;
const [MISSING_DAY, EXTRA_DAY] = DAYS;

const clock = { now: Date.parse(`${DAYS[0]}T12:00:00Z`) };
let fake: FakeUpstream;
let test: TestApp;

beforeAll(async () => {
  fake = await startFakeUpstream({
    apiKey: UPSTREAM_KEY,
    now: () => clock.now,
    billing: {
      adminKey: ADMIN_KEY,
      project: 'proj_tollgate',
      deviations: {
        dropDays: [MISSING_DAY],
        priceMultipliers: { 'gpt-4o': 1.5 },
        extraRequests: [{ day: EXTRA_DAY!, model: 'gpt-4o-mini', inputTokens: 1000, outputTokens: 500 }],
      },
    },
  });
  test = buildTestApp({
    upstream: createUpstream({ url: fake.url, apiKey: UPSTREAM_KEY, connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 8 }),
    logger: captureLogs('silent').logger,
    now: () => clock.now,
  });
  const acme = test.issueKey('acme-app', { limits: [] }, { tenant: 'acme' });
  const other = test.issueKey('other-app');
  const sdk = (apiKey: string) =>
    new OpenAI({ baseURL: 'http://tollgate.test/v1', apiKey, maxRetries: 0, fetch: (url, init) => Promise.resolve(test.app.request(String(url), init)) });
  for (const [i, day] of DAYS.entries()) {
    clock.now = Date.parse(`${day}T${String(9 + i).padStart(2, '0')}:30:00Z`);
    for (const client of [sdk(acme), sdk(other)]) {
      await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Hello on ${day}` }] });
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Stream, please.' }], stream: true });
      for await (const _ of stream) {
        // read to the end
      }
      await client.chat.completions.create(
        { model: 'gpt-4o', messages: [{ role: 'user', content: 'Something dearer.' }] },
        { headers: { 'x-fake-scenario': 'cached=0,words=30' } },
      );
      await client.embeddings.create({ model: 'text-embedding-3-small', input: ['one line', 'another line'] });
    }
  }
  await fake.settled();
  test.ledger.flush();
});

afterAll(async () => {
  test.close();
  await fake.close();
});

async function reconcile(options: { projects?: { default?: string; keys?: Record<string, string> }; adminKey?: string } = {}): Promise<ReconcileResult> {
  const { result } = await runReconcile({
    ledger: openLedgerCells({ kind: 'sqlite', database: test.db.database }),
    results: sqliteReconciliations(test.db.database),
    provider: openAIUsageProvider({ baseUrl: fake.url, adminKey: options.adminKey ?? ADMIN_KEY }),
    range: { since: DAYS[0], until: DAYS[2] },
    mapping: options.projects,
    prices: loadConfig({}).prices,
    tolerancePercent: 1,
    now: clock.now,
  });
  return result;
}

const differing = (result: ReconcileResult) =>
  result.rows
    .filter((row) => row.status !== 'match')
    .map((row) => `${row.day} ${row.model}${row.project === null ? '' : ` ${row.project}`}: ${row.status}`)
    .sort();

describe('the report finds exactly the deliberate differences', () => {
  it('by day and model', async () => {
    const result = await reconcile();
    expect(result.byProject).toBe(false);
    expect(differing(result)).toEqual([
      '2026-11-18 gpt-4o-mini: missing_at_provider',
      '2026-11-18 gpt-4o: missing_at_provider',
      '2026-11-18 text-embedding-3-small: missing_at_provider',
      '2026-11-19 gpt-4o-mini: differs',
      '2026-11-19 gpt-4o: differs',
      '2026-11-20 gpt-4o: differs',
    ]);
    expect(result.differences).toBe(6);
    // Every other cell agrees: both days' embeddings and the last day's gpt-4o-mini.
    expect(result.rows.filter((row) => row.status === 'match').map((row) => `${row.day} ${row.model}`)).toEqual([
      '2026-11-19 text-embedding-3-small',
      '2026-11-20 gpt-4o-mini',
      '2026-11-20 text-embedding-3-small',
    ]);

    // The extra request: the provider has one more request and exactly its tokens.
    const extra = result.rows.find((row) => row.day === EXTRA_DAY && row.model === 'gpt-4o-mini')!;
    expect(extra.provider!.requests - extra.ledger!.requests).toBe(1);
    expect(extra.provider!.inputTokens - extra.ledger!.inputTokens).toBe(1000);
    expect(extra.provider!.outputTokens - extra.ledger!.outputTokens).toBe(500);
    expect(extra.note).toContain('provider has 1 more requests');
    // The dearer model: same tokens, 1.5× the money.
    for (const row of result.rows.filter((r) => r.model === 'gpt-4o' && r.status === 'differs')) {
      expect(row.ledger!.inputTokens + row.ledger!.outputTokens).toBe(row.provider!.inputTokens + row.provider!.outputTokens);
      expect(row.tokensDiffPercent).toBe(0);
      expect(row.costDiffPercent).toBeGreaterThan(-34);
      expect(row.costDiffPercent).toBeLessThan(-32);
      expect(row.note).toMatch(/^provider billed \$0\.\d+ more$/);
    }
    // The missing day: the ledger's side is all there, the provider's is absent.
    const missing = result.rows.filter((row) => row.day === MISSING_DAY);
    expect(missing.map((row) => [row.model, row.provider, row.ledger!.requests])).toEqual([
      ['gpt-4o', null, 2],
      ['gpt-4o-mini', null, 4],
      ['text-embedding-3-small', null, 2],
    ]);

    // Only gpt-4o's price entry is flagged, for its input and its output.
    expect(result.priceFlags.map((flag) => `${flag.model} ${flag.kind}`)).toEqual(['gpt-4o input', 'gpt-4o output']);
    for (const flag of result.priceFlags) {
      // 1.5× the table, give or take the micro-dollar rounding of a few small line items.
      expect(Math.abs(flag.effectiveMicroUsdPer1M / flag.tableMicroUsdPer1M - 1.5)).toBeLessThan(0.02);
    }
  });

  it('by day, model and project when keys are mapped to projects', async () => {
    const result = await reconcile({ projects: { default: 'proj_tollgate' } });
    expect(result.byProject).toBe(true);
    expect(differing(result)).toEqual([
      '2026-11-18 gpt-4o proj_tollgate: missing_at_provider',
      '2026-11-18 gpt-4o-mini proj_tollgate: missing_at_provider',
      '2026-11-18 text-embedding-3-small proj_tollgate: missing_at_provider',
      '2026-11-19 gpt-4o proj_tollgate: differs',
      '2026-11-19 gpt-4o-mini proj_tollgate: differs',
      '2026-11-20 gpt-4o proj_tollgate: differs',
    ]);
  });

  it('a key mapped to the wrong project shows as missing on both sides', async () => {
    const result = await reconcile({ projects: { default: 'proj_tollgate', keys: { 'other-app': 'proj_elsewhere' } } });
    const day3 = result.rows.filter((row) => row.day === '2026-11-20' && row.model === 'gpt-4o-mini');
    expect(day3.map((row) => `${row.project}: ${row.status}`).sort()).toEqual(['proj_elsewhere: missing_at_provider', 'proj_tollgate: differs']);
  });
});

describe('the admin key and the stored result', () => {
  it('is stored, newest first, for the dashboard', async () => {
    const result = await reconcile();
    const stored = (await sqliteReconciliations(test.db.database).latest())!;
    expect(stored.report.differences).toBe(result.differences);
    expect(stored.report.generatedAt).toBe(result.generatedAt);
    expect(JSON.stringify(stored)).not.toContain(ADMIN_KEY);
  });

  it('a wrong admin key fails with the provider status, and neither key shows', async () => {
    const wrong = 'sk-admin-wrong-key-000000000000';
    const failure = await reconcile({ adminKey: wrong }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ProviderReportError);
    expect((failure as ProviderReportError).status).toBe(401);
    expect((failure as Error).message).not.toContain(wrong);
    expect((failure as Error).message).not.toContain(ADMIN_KEY);
  });

  it('tollgate reconcile prints the table and JSON, never the key', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY,
      TOLLGATE_PROVIDER_API_URL: fake.url,
      TOLLGATE_DB: test.db.path,
      TOLLGATE_CONFIG: '',
      TOLLGATE_DATABASE_URL: '',
    });
    try {
      const human = await cli('reconcile', '--since', DAYS[0], '--until', DAYS[2]);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain('6 cell(s) differ, 2 price entries flagged');
      expect(human.stdout).toMatch(/2026-11-18\s+gpt-4o-mini\s+missing_at_provider/);
      expect(human.stdout).toContain('the provider charged');
      const json = await cli('reconcile', '--since', DAYS[0], '--until', DAYS[2], '--json');
      expect(json.json<ReconcileResult>().differences).toBe(6);
      for (const run of [human, json]) expect(run.stdout + run.stderr).not.toContain(ADMIN_KEY);

      // Differences alone exit 0 (above); --fail-on-diff prints the same report and exits 1, for CI.
      const strict = await cli('reconcile', '--since', DAYS[0], '--until', DAYS[2], '--fail-on-diff');
      expect(strict.code).toBe(1);
      expect(strict.stdout).toContain('6 cell(s) differ, 2 price entries flagged');
      expect(strict.stderr).toContain('6 cell(s) differ beyond the 1% tolerance');
      const agreeing = await cli('reconcile', '--since', '2026-11-10', '--until', '2026-11-11', '--fail-on-diff');
      expect(agreeing.stdout).toContain('every cell agrees');
      expect(agreeing.code).toBe(0);

      process.env.TOLLGATE_PROVIDER_ADMIN_KEY = 'sk-admin-wrong-key-000000000000';
      const refused = await cli('reconcile', '--since', DAYS[0]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('answered 401');
      expect(refused.stderr).not.toContain('sk-admin-wrong-key-000000000000');
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });
});
