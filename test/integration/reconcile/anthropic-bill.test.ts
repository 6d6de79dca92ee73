/**
 * The ledger against Anthropic's own bill: Messages API traffic through the
 * real proxy (JSON and streamed, two models, cache reads and 5-minute and
 * 1-hour cache writes, one OpenAI chat beside it) to a fake upstream that
 * serves Anthropic's Admin API Usage and Cost reports built from what it
 * billed. With two deliberate differences planted (one model priced 1.5× the
 * table, one request Tollgate never sent), `tollgate reconcile --provider
 * anthropic` finds exactly those; with none, both bills agree, Anthropic's to
 * the micro-dollar. The admin keys never show.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import type { ReconcileResult } from '../../../src/reconcile/run.js';
import type { BillingDeviations } from '../../../src/demo/fake-upstream/index.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';
import { cli, type CliResult } from '../../support/cli.js';

// The fake's admin APIs (OpenAI's and Anthropic's) take the same admin key.
const ADMIN_KEY = 'sk-ant-admin01-reconcile-secret-4242424242';
const SONNET = 'claude-sonnet-4-5';
const HAIKU = 'claude-haiku-4-5';
/** Only in the Message Batch: its lines bill at half price, which may end in half a micro-dollar. */
const OPUS = 'claude-opus-4-1';
// A long prompt, so the cache reads and writes the scenarios ask for fit in it. Their sizes
// (reads a multiple of 10, 5-minute writes of 4) make every request's cost whole micro-dollars.
const PROMPT = 'Tell me, in a few words, how many quick brown foxes jump over how many lazy dogs on a sunny day in the park. '.repeat(3);
const EXTRA = { inputTokens: 1000, outputTokens: 500 };

let planted: TestProxy;
let clean: TestProxy;
const today = new Date().toISOString().slice(0, 10);
// Yesterday too, so the reports page (one daily bucket a page); neither side has usage then.
const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

function ledgerRows(proxy: TestProxy): Array<{ status: string }> {
  const database = openDatabase(proxy.dbPath);
  try {
    return database.sqlite.prepare('SELECT status FROM ledger').all() as Array<{ status: string }>;
  } finally {
    database.close();
  }
}

async function message(proxy: TestProxy, body: Record<string, unknown>, scenario: string): Promise<void> {
  const response = await fetch(`${proxy.anthropicBaseURL}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': proxy.key, 'anthropic-version': '2023-06-01', 'x-fake-scenario': scenario },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  await response.text();
}

/** A Message Batch of two lines with 5-minute cache writes; its one ledger row settles once it has ended. */
async function batch(proxy: TestProxy): Promise<void> {
  const params = {
    model: OPUS,
    max_tokens: 100,
    messages: [{ role: 'user', content: [{ type: 'text', text: PROMPT, cache_control: { type: 'ephemeral' } }] }],
  };
  const response = await fetch(`${proxy.anthropicBaseURL}/v1/messages/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': proxy.key, 'anthropic-version': '2023-06-01', 'x-fake-scenario': 'cacheWrite=8,batchMs=50' },
    body: JSON.stringify({
      requests: [
        { custom_id: 'a', params },
        { custom_id: 'b', params },
      ],
    }),
  });
  expect(response.status).toBe(200);
  await response.text();
}

/** The same traffic on either proxy: cache writes of both TTLs, cache reads, a stream, two models, a batch, and one OpenAI chat. */
async function sendTraffic(proxy: TestProxy): Promise<void> {
  const write5m = [{ role: 'user', content: [{ type: 'text', text: PROMPT, cache_control: { type: 'ephemeral' } }] }];
  const system1h = [{ type: 'text', text: 'Answer briefly.', cache_control: { type: 'ephemeral', ttl: '1h' } }];
  const plain = [{ role: 'user', content: PROMPT }];
  await message(proxy, { model: SONNET, max_tokens: 200, messages: write5m }, 'cacheWrite=8');
  await message(proxy, { model: SONNET, max_tokens: 200, system: system1h, messages: write5m, stream: true }, 'cacheRead=10,cacheWrite1h=5,cacheWrite=4');
  await message(proxy, { model: SONNET, max_tokens: 200, messages: plain }, 'cacheRead=20,words=30');
  await message(proxy, { model: HAIKU, max_tokens: 200, system: system1h, messages: plain }, 'cacheWrite1h=7');
  await message(proxy, { model: HAIKU, max_tokens: 200, messages: plain, stream: true }, 'words=20');
  const chat = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${proxy.key}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
  });
  expect(chat.status).toBe(200);
  await chat.text();
  await batch(proxy);
  await waitFor(
    () => {
      const rows = ledgerRows(proxy);
      return rows.length === 7 && rows.every((row) => row.status !== 'pending');
    },
    'every request and the batch to settle in the ledger',
    15_000,
  );
  await proxy.fake.settled();
}

async function startProxy(deviations?: BillingDeviations): Promise<TestProxy> {
  return startTestProxy({ TOLLGATE_BATCH_POLL: '20ms' }, { fake: { billing: { adminKey: ADMIN_KEY, pageSize: 1, ...(deviations ? { deviations } : {}) } } });
}

beforeAll(async () => {
  [planted, clean] = await Promise.all([
    startProxy({ priceMultipliers: { [HAIKU]: 1.5 }, extraRequests: [{ day: today, model: SONNET, ...EXTRA }] }),
    startProxy(),
  ]);
  await Promise.all([sendTraffic(planted), sendTraffic(clean)]);
});

afterAll(async () => {
  await Promise.all([planted?.close(), clean?.close()]);
});

/** `tollgate reconcile` in-process, with the proxy's file and both providers' admin APIs on its fake. */
async function reconcile(proxy: TestProxy, env: Record<string, string>, ...argv: string[]): Promise<CliResult> {
  const saved = { ...process.env };
  Object.assign(process.env, {
    TOLLGATE_DB: proxy.dbPath,
    TOLLGATE_CONFIG: '',
    TOLLGATE_DATABASE_URL: '',
    TOLLGATE_ANTHROPIC_ADMIN_URL: `http://127.0.0.1:${proxy.fake.port}`,
    TOLLGATE_PROVIDER_API_URL: proxy.fake.url,
    ...env,
  });
  try {
    const run = await cli('reconcile', '--since', yesterday, '--until', today, ...argv);
    expect(run.stdout + run.stderr).not.toContain(ADMIN_KEY);
    return run;
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

const cells = (result: ReconcileResult) => result.rows.map((row) => `${row.day} ${row.model}: ${row.status}`).sort();

describe("Anthropic's bill against the ledger", () => {
  it('finds exactly the planted differences: a model priced 1.5× and a request Tollgate never sent', async () => {
    const run = await reconcile(planted, { TOLLGATE_ANTHROPIC_ADMIN_KEY: ADMIN_KEY }, '--json');
    expect(run.code).toBe(0);
    const result = run.json<ReconcileResult>();
    expect(result.provider).toBe('anthropic');
    expect(result.byProject).toBe(false);
    // Only the Messages rows: the OpenAI chat is not on Anthropic's bill.
    expect(cells(result)).toEqual([`${today} ${HAIKU}: differs`, `${today} ${OPUS}: match`, `${today} ${SONNET}: differs`]);
    expect(result.differences).toBe(2);
    expect(result.pending).toBe(0);

    const sonnet = result.rows.find((row) => row.model === SONNET)!;
    const haiku = result.rows.find((row) => row.model === HAIKU)!;
    // The extra request: exactly its tokens more at the provider; cache reads and writes agree.
    expect(sonnet.provider!.inputTokens - sonnet.ledger!.inputTokens).toBe(EXTRA.inputTokens);
    expect(sonnet.provider!.outputTokens - sonnet.ledger!.outputTokens).toBe(EXTRA.outputTokens);
    expect(sonnet.provider!.cachedInputTokens).toBe(sonnet.ledger!.cachedInputTokens);
    expect(sonnet.provider!.cacheWriteTokens).toBe(sonnet.ledger!.cacheWriteTokens);
    expect(sonnet.ledger!.cachedInputTokens).toBe(30);
    expect(sonnet.ledger!.cacheWriteTokens).toBe(17);
    expect(sonnet.note).toBe(
      `provider has ${EXTRA.inputTokens} more input tokens; provider has ${EXTRA.outputTokens} more output tokens; provider billed $0.0105 more`,
    );
    // Requests are not compared: Anthropic's report counts none.
    expect(sonnet.provider!.requests).toBe(0);
    // The dearer model: every token agrees, the money is 1.5×.
    expect(haiku.provider).toMatchObject({
      inputTokens: haiku.ledger!.inputTokens,
      cachedInputTokens: haiku.ledger!.cachedInputTokens,
      cacheWriteTokens: haiku.ledger!.cacheWriteTokens,
      outputTokens: haiku.ledger!.outputTokens,
    });
    expect(haiku.ledger!.cacheWriteTokens).toBe(7);
    // (1.5× a whole number of micro-dollars may end in half of one, rounded.)
    expect(Math.abs(haiku.provider!.costMicros * 2 - haiku.ledger!.costMicros * 3)).toBeLessThanOrEqual(1);
    expect(haiku.note).toMatch(/^provider billed \$0\.\d+ more$/);

    // Only the dearer model's price entry is flagged, for its input (cache writes included) and its output.
    expect(result.priceFlags.map((flag) => `${flag.model} ${flag.kind}`)).toEqual([`${HAIKU} input`, `${HAIKU} output`]);
    // 1.5× the table, give or take the micro-dollar rounding of a few small line items.
    for (const flag of result.priceFlags) expect(Math.abs(flag.diffPercent - 50)).toBeLessThan(1);
    expect(result.unattributedCosts).toEqual([]);

    const human = await reconcile(planted, { TOLLGATE_ANTHROPIC_ADMIN_KEY: ADMIN_KEY }, '--provider', 'anthropic', '--fail-on-diff');
    expect(human.code).toBe(1);
    expect(human.stdout).toContain('Ledger vs anthropic');
    expect(human.stdout).toContain('2 cell(s) differ, 2 price entries flagged');
    expect(human.stderr).toContain('2 cell(s) differ beyond the 1% tolerance');
  });

  it('agrees with no deviations: both bills read when both admin keys are set, Anthropic to the micro-dollar', async () => {
    const run = await reconcile(clean, { TOLLGATE_ANTHROPIC_ADMIN_KEY: ADMIN_KEY, TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY }, '--json', '--fail-on-diff');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [openai, anthropic] = run.json<ReconcileResult[]>();
    expect(openai!.provider).toBe('openai');
    expect(cells(openai!)).toEqual([`${today} gpt-4o-mini: match`]);
    expect(anthropic!.provider).toBe('anthropic');
    expect(cells(anthropic!)).toEqual([`${today} ${HAIKU}: match`, `${today} ${OPUS}: match`, `${today} ${SONNET}: match`]);
    expect(anthropic!.priceFlags).toEqual([]);
    for (const row of anthropic!.rows) {
      const { costMicros: ledgerCost, ...ledgerTokens } = row.ledger!;
      const { costMicros: providerCost, ...providerTokens } = row.provider!;
      expect({ ...providerTokens, requests: 0 }).toEqual({ ...ledgerTokens, requests: 0 });
      expect(ledgerCost).toBeGreaterThan(0);
      // To the micro-dollar; the batch's two half-price lines may each round up half of one.
      expect(ledgerCost - providerCost).toBeLessThanOrEqual(row.model === OPUS ? 2 : 0);
      expect(ledgerCost - providerCost).toBeGreaterThanOrEqual(0);
    }
    // The batch: one ledger row, its cache writes on both sides, at half price on both.
    const opus = anthropic!.rows.find((row) => row.model === OPUS)!;
    expect(opus.ledger!.requests).toBe(1);
    expect(opus.ledger!.cacheWriteTokens).toBe(16);

    const human = await reconcile(clean, { TOLLGATE_ANTHROPIC_ADMIN_KEY: ADMIN_KEY, TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY });
    expect(human.stdout).toContain('Ledger vs openai');
    expect(human.stdout).toContain('Ledger vs anthropic');
    expect(human.stdout.match(/every cell agrees/g)).toHaveLength(2);
  });

  it('asks for the key it needs, and a wrong key fails with the status and without the key', async () => {
    const missing = await reconcile(clean, { TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY }, '--provider', 'anthropic');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('TOLLGATE_ANTHROPIC_ADMIN_KEY');
    const wrong = 'sk-ant-admin01-wrong-000000000000';
    const refused = await reconcile(clean, { TOLLGATE_ANTHROPIC_ADMIN_KEY: wrong });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('answered 401');
    expect(refused.stderr).not.toContain(wrong);
  });
});
