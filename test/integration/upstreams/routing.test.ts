/**
 * Many upstreams behind one key, end to end with the real `openai` SDK: a
 * config file routes models to an OpenAI-like fake, an Azure-like fake
 * (api-key header, deployment URLs with api-version, the v1 API), an
 * OpenRouter-like fake (usage.cost) and a dead port. The ledger equals each
 * fake's own bill at that upstream's price, the client sees one answer,
 * fallbacks happen only before the first byte, and every attempt is recorded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { REFUSED_PORT } from '../../support/refused.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type TollgateDatabase } from '../../../src/storage/sqlite/open.js';
import { builtinPriceTable, costMicroUsd, mergePriceTable, priceTableOverrideSchema, resolvePrice } from '../../../src/estimate/prices.js';
import type { FakeBilling, FakeUpstream } from '../../../src/demo/fake-upstream/index.js';
import { startFakeUpstream } from '../../support/fake-upstream.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

const PRIMARY_KEY = 'sk-primary-secret-000000000000';
const AZURE_KEY = 'azure-secret-1111111111111111';
const ROUTER_KEY = 'sk-or-secret-22222222222222222';
const AZURE_PRICES = { models: { 'gpt-4o-mini': { input: 0.2, cachedInput: 0.1, output: 0.8 } } };

let primary: FakeUpstream;
let azure: FakeUpstream;
let openrouter: FakeUpstream;
let slow: FakeUpstream;
let proxy: TestProxy;
let client: OpenAI;
let database: TollgateDatabase;
let dir: string;

beforeAll(async () => {
  primary = await startFakeUpstream({ apiKey: PRIMARY_KEY });
  azure = await startFakeUpstream({ apiKey: AZURE_KEY, kind: 'azure', apiVersion: '2024-10-21' });
  openrouter = await startFakeUpstream({ apiKey: ROUTER_KEY, kind: 'openrouter', costPer1M: { input: 0.05, output: 0.25 } });
  slow = await startFakeUpstream({});
  dir = mkdtempSync(join(tmpdir(), 'tollgate-upstreams-'));
  const config = {
    upstreams: [
      { name: 'primary', kind: 'openai', baseUrl: primary.url, keyEnv: 'PRIMARY_KEY', models: ['gpt-4o-mini', 'gpt-4.1-nano'] },
      {
        name: 'azure',
        kind: 'azure',
        baseUrl: `http://127.0.0.1:${azure.port}/openai`,
        keyEnv: 'AZURE_KEY',
        apiVersion: '2024-10-21',
        aliases: { 'gpt-4o': 'prod-4o', 'gpt-4o-mini': 'mini-east' },
        prices: AZURE_PRICES,
      },
      { name: 'azure-v1', kind: 'azure', baseUrl: `http://127.0.0.1:${azure.port}/openai/v1`, keyEnv: 'AZURE_KEY', models: ['gpt-4.1-mini'] },
      { name: 'openrouter', kind: 'openai-compatible', baseUrl: openrouter.url, keyEnv: 'ROUTER_KEY', models: ['meta-llama/*'], usageCost: true },
      { name: 'dead', kind: 'openai-compatible', baseUrl: `http://127.0.0.1:${REFUSED_PORT}/v1`, models: ['gpt-4.1-nano'] },
      { name: 'slow', kind: 'openai-compatible', baseUrl: slow.url, models: ['gpt-4.1'], headersTimeoutMs: 300, billsErrors: true },
    ],
    routes: { 'gpt-4o-mini': ['primary', 'azure'], 'gpt-4.1-nano': ['dead', 'primary'], 'gpt-4.1': ['slow', 'primary'] },
    fallback: { maxRetryAfterMs: 60_000, breakerFailures: 100 },
  };
  const path = join(dir, 'tollgate.json');
  writeFileSync(path, JSON.stringify(config));
  proxy = await startTestProxy({ TOLLGATE_CONFIG: path, PRIMARY_KEY, AZURE_KEY, ROUTER_KEY });
  client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
  database = openDatabase(proxy.dbPath);
});

afterAll(async () => {
  database.close();
  await proxy.close();
  await Promise.all([primary.close(), azure.close(), openrouter.close(), slow.close()]);
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  primary.setScenario('');
  azure.setScenario('');
});

const messages = [{ role: 'user' as const, content: 'How many foxes jump over how many dogs?' }];

interface Row {
  status: string;
  upstream: string | null;
  attempts: number | null;
  billed_attempts: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
  model: string;
}

/** The ledger row of the request the proxy answered with this `x-request-id`, once settled. */
async function rowOf(requestId: string): Promise<Row> {
  const read = () => database.sqlite.prepare('SELECT * FROM ledger WHERE request_id = ?').get(requestId) as Row | undefined;
  await waitFor(() => read()?.status !== undefined && read()?.status !== 'pending', `ledger row ${requestId}`);
  return read()!;
}

const azureTable = mergePriceTable(builtinPriceTable, priceTableOverrideSchema.parse(AZURE_PRICES));

/** What `billed` costs at `model`'s price in `table`, integer µUSD. */
function priced(billed: FakeBilling, model: string, table = builtinPriceTable): number {
  return costMicroUsd(billed, resolvePrice(model, table));
}

describe('routing by model', () => {
  it('sends an aliased model to its Azure deployment URL with api-key and api-version, and bills the Azure bill', async () => {
    const before = azure.requests.length;
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBeTruthy();
    const sent = azure.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe('/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21');
    expect(sent[0]!.headers['api-key']).toBe(AZURE_KEY);
    expect(sent[0]!.headers.authorization).toBeUndefined();
    const row = await rowOf(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'ok', upstream: 'azure', attempts: 1, billed_attempts: 0, model: 'gpt-4o' });
    expect(row.prompt_tokens).toBe(sent[0]!.billed.promptTokens);
    expect(row.cost_micros).toBe(priced(sent[0]!.billed, 'gpt-4o'));
  });

  it("uses Azure's v1 API when the base URL ends in /openai/v1, with the model in the body", async () => {
    const before = azure.requests.length;
    const { response } = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages }).withResponse();
    const sent = azure.requests.slice(before);
    expect(sent.map((r) => r.url)).toEqual(['/openai/v1/chat/completions']);
    expect((sent[0]!.body as { model: string }).model).toBe('gpt-4.1-mini');
    const row = await rowOf(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ upstream: 'azure-v1', attempts: 1 });
    expect(row.cost_micros).toBe(priced(sent[0]!.billed, 'gpt-4.1-mini'));
  });

  it('bills an OpenRouter answer at the usage.cost it reports, JSON and stream', async () => {
    const before = openrouter.requests.length;
    const { response } = await client.chat.completions.create({ model: 'meta-llama/llama-3.1-8b-instruct', messages }).withResponse();
    const stream = await client.chat.completions.create({ model: 'meta-llama/llama-3.1-8b-instruct', messages, stream: true }).withResponse();
    let text = '';
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).not.toBe('');
    const sent = openrouter.requests.slice(before);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.headers.authorization).toBe(`Bearer ${ROUTER_KEY}`);
    for (const [i, id] of [response.headers.get('x-request-id')!, stream.response.headers.get('x-request-id')!].entries()) {
      const row = await rowOf(id);
      const billedUsd = sent[i]!.billed.costUsd!;
      expect(billedUsd).toBeGreaterThan(0);
      expect(row.upstream).toBe('openrouter');
      expect(row.cost_micros).toBe(Math.ceil(billedUsd * 1e6 - 1e-6));
    }
  });

  it('refuses a model no upstream serves with 400 model_not_found, and records it', async () => {
    const error = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('model_not_found');
  });

  it('lists every upstream’s models the key may use', async () => {
    const limited = proxy.issueKey('llama-and-4o', { limits: [], models: ['meta-llama/*', 'gpt-4o'] });
    const all = await client.models.list();
    const ids = all.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['gpt-4o', 'gpt-4o-mini', 'gpt-4.1-mini', 'gpt-4.1-nano']));
    const restricted = await new OpenAI({ baseURL: proxy.baseURL, apiKey: limited, maxRetries: 0 }).models.list();
    expect(restricted.data.map((m) => m.id)).toEqual(['gpt-4o']);
    const one = await client.models.retrieve('gpt-4o');
    expect(one).toMatchObject({ id: 'gpt-4o', owned_by: 'azure' });
  });
});

describe('fallbacks before the first byte', () => {
  it('falls through a 5xx to the next upstream: one answer, billed once at the answering price, both attempts recorded', async () => {
    primary.setScenario('status=503');
    const [p, a] = [primary.requests.length, azure.requests.length];
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(data.choices).toHaveLength(1);
    expect(primary.requests.slice(p).map((r) => r.status)).toEqual([503]);
    const answered = azure.requests.slice(a);
    expect(answered.map((r) => r.url)).toEqual(['/openai/deployments/mini-east/chat/completions?api-version=2024-10-21']);
    const row = await rowOf(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'ok', upstream: 'azure', attempts: 2, billed_attempts: 0 });
    expect(row.cost_micros).toBe(priced(answered[0]!.billed, 'gpt-4o-mini', azureTable));
    expect(row.cost_micros).not.toBe(priced(answered[0]!.billed, 'gpt-4o-mini'));
  });

  it('falls through a stream’s 5xx too, and the client reads one stream', async () => {
    primary.setScenario('status=500');
    const a = azure.requests.length;
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true }).withResponse();
    let text = '';
    for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).not.toBe('');
    const row = await rowOf(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'ok', upstream: 'azure', attempts: 2 });
    expect(row.cost_micros).toBe(priced(azure.requests[a]!.billed, 'gpt-4o-mini', azureTable));
  });

  it('falls through a dead port to the next upstream', async () => {
    const p = primary.requests.length;
    const { response } = await client.chat.completions.create({ model: 'gpt-4.1-nano', messages }).withResponse();
    const row = await rowOf(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'ok', upstream: 'primary', attempts: 2, billed_attempts: 0 });
    expect(row.cost_micros).toBe(priced(primary.requests[p]!.billed, 'gpt-4.1-nano'));
  });

  it('records a try the upstream may bill: a timeout after the request was sent, a 5xx of an upstream that bills errors', async () => {
    for (const scenario of ['headersDelay=3000', 'status=502']) {
      slow.setScenario(scenario);
      const s = slow.requests.length;
      const p = primary.requests.length;
      const { response } = await client.chat.completions.create({ model: 'gpt-4.1', messages }).withResponse();
      expect(slow.requests.length).toBe(s + 1);
      const row = await rowOf(response.headers.get('x-request-id')!);
      expect(row).toMatchObject({ status: 'ok', upstream: 'primary', attempts: 2, billed_attempts: 1 });
      // The client pays once, for the answer it got.
      expect(row.cost_micros).toBe(priced(primary.requests[p]!.billed, 'gpt-4.1'));
    }
  });

  it('never falls back once the answer has begun: a stream that breaks ends in an error and no other upstream is asked', async () => {
    primary.setScenario('breakAfter=2,words=30');
    const a = azure.requests.length;
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true }).withResponse();
    let text = '';
    const failure = await (async () => {
      for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(text).not.toBe('');
    expect(azure.requests.length).toBe(a);
    expect(await rowOf(response.headers.get('x-request-id')!)).toMatchObject({ status: 'upstream_interrupted', upstream: 'primary', attempts: 1 });
  });

  it('falls through a 429 and leaves that upstream alone for its Retry-After', async () => {
    primary.setScenario('status=429,retryAfter=30');
    const p = primary.requests.length;
    const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    primary.setScenario('');
    const second = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    // The second request went straight to Azure: the primary asked for 30 s of quiet.
    expect(primary.requests.slice(p).map((r) => r.status)).toEqual([429]);
    expect(await rowOf(first.response.headers.get('x-request-id')!)).toMatchObject({ upstream: 'azure', attempts: 2 });
    expect(await rowOf(second.response.headers.get('x-request-id')!)).toMatchObject({ upstream: 'azure', attempts: 1 });
    const metrics = await (await fetch(`${proxy.server.url}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_upstream_attempts_total\{upstream="primary",outcome="rate_limited"\} 1/);
    expect(metrics).toMatch(/tollgate_upstream_attempts_total\{upstream="primary",outcome="skipped"\} 1/);
    expect(metrics).toMatch(/tollgate_prompt_estimate_ratio_count\{endpoint="chat",upstream="azure"\} \d+/);
  });
});
