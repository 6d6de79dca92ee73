/**
 * Every priced dimension through a whole Tollgate (real server, real SQLite, the fake upstream,
 * the openai SDK): the ledger row's cost equals the price computed by hand from the fake's bill
 * and the pricing page's numbers — service tier, audio tokens, built-in tool calls, reasoning —
 * and unknown models are refused with the setting, reserved at the highest prices without it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

type Row = Record<string, number | string | null>;

/** µUSD for tokens at USD-per-1M prices, rounded up once: the arithmetic of the pricing page. */
function micros(parts: Array<[tokens: number, usdPer1M: number]>, perUnitMicros = 0): number {
  const exact = parts.reduce((sum, [tokens, usd]) => sum + BigInt(tokens) * BigInt(Math.round(usd * 1e6)), 0n);
  return Number((exact + 999_999n) / 1_000_000n) + perUnitMicros;
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // read to the end
  }
}

const tagged = (tag: string) => ({ headers: { 'x-fake-scenario': tag } });
const messages = [{ role: 'user' as const, content: 'How many foxes jump over how many dogs?' }];

async function settledRows(proxy: TestProxy, count: number): Promise<Map<string, Row>> {
  await proxy.fake.settled();
  const database = openDatabase(proxy.dbPath);
  try {
    await waitFor(
      () => (database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status != 'pending'").get() as { n: number }).n >= count,
      'every request to settle',
    );
    const rows = database.sqlite.prepare('SELECT * FROM ledger').all() as Row[];
    return new Map(rows.map((row) => [String(row.request_id), row]));
  } finally {
    database.close();
  }
}

function rowOf(rows: Map<string, Row>, record: RecordedRequest): Row {
  const row = rows.get(String(record.headers['x-client-request-id']));
  expect(row, `a ledger row for ${JSON.stringify(record.body)}`).toBeDefined();
  return row!;
}

describe('every priced dimension', () => {
  let proxy: TestProxy;
  let client: OpenAI;
  beforeAll(async () => {
    proxy = await startTestProxy();
    client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('bills each dimension at its own price, as computed by hand', async () => {
    await Promise.all([
      // priority asked and used: gpt-5 priority $2.50 / $0.25 cached / $20
      client.chat.completions.create({ model: 'gpt-5', messages, service_tier: 'priority' }, tagged('cached=4')),
      // not asked, but the upstream says it used flex (o3 flex $1 / $4) — streamed, usage injected
      client.chat.completions.create({ model: 'o3', messages, stream: true }, tagged('tier=flex,reasoning=300')).then(drain),
      // audio in and out: gpt-4o-audio-preview text $2.50 / $10, audio $40 / $80
      client.chat.completions.create(
        { model: 'gpt-4o-audio-preview', messages, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } },
        tagged('audioIn=40,audioOut=200'),
      ),
      // reasoning as output: o4-mini $1.10 / $4.40
      client.chat.completions.create({ model: 'o4-mini', messages }, tagged('reasoning=2000')),
      // built-in tools, JSON and streamed: gpt-4.1 $2 / $8 + the calls
      client.responses.create(
        {
          model: 'gpt-4.1',
          input: 'Search, compute, draw.',
          tools: [
            { type: 'web_search' },
            { type: 'file_search', vector_store_ids: ['vs_1'] },
            { type: 'code_interpreter', container: { type: 'auto' } },
            { type: 'image_generation', model: 'gpt-image-1-mini', quality: 'low', size: '1024x1024' },
          ],
        },
        tagged('webSearch=2,fileSearch=1,codeInterpreter=1,images=1'),
      ),
      client.responses
        .create({ model: 'gpt-4.1', input: 'Search twice.', stream: true, tools: [{ type: 'web_search_preview' }] }, tagged('webSearch=2,tier=priority'))
        .then(drain),
    ]);
    const rows = await settledRows(proxy, 6);
    const find = (model: string, stream = false) =>
      proxy.fake.requests.find((r) => (r.body as { model: string }).model === model && (r.body as { stream?: boolean }).stream === (stream || undefined))!;
    const check = (record: RecordedRequest, expected: number, extra: Row = {}) => {
      const row = rowOf(rows, record);
      expect(row.status).toBe('ok');
      expect(row.cost_micros, JSON.stringify(record.billed)).toBe(expected);
      expect(row).toMatchObject(extra);
      return row;
    };

    const priority = find('gpt-5').billed;
    check(
      find('gpt-5'),
      micros([
        [priority.promptTokens - priority.cachedTokens, 2.5],
        [priority.cachedTokens, 0.25],
        [priority.completionTokens, 20],
      ]),
      { service_tier: 'priority', cached_tokens: 4 },
    );

    const flexRecord = proxy.fake.requests.find((r) => (r.body as { model: string }).model === 'o3')!;
    const flex = flexRecord.billed;
    check(
      flexRecord,
      micros([
        [flex.promptTokens, 1],
        [flex.completionTokens, 4],
      ]),
      { service_tier: 'flex', reasoning_tokens: 300 },
    );

    const audio = find('gpt-4o-audio-preview').billed;
    check(
      find('gpt-4o-audio-preview'),
      micros([
        [audio.promptTokens - 40, 2.5],
        [40, 40],
        [audio.completionTokens - 200, 10],
        [200, 80],
      ]),
      { audio_prompt_tokens: 40, audio_completion_tokens: 200 },
    );

    const reasoning = find('o4-mini').billed;
    expect(reasoning.completionTokens).toBeGreaterThan(2000);
    check(
      find('o4-mini'),
      micros([
        [reasoning.promptTokens, 1.1],
        [reasoning.completionTokens, 4.4],
      ]),
      { reasoning_tokens: 2000, completion_tokens: reasoning.completionTokens },
    );

    // 2 web searches × $0.01 + 1 file search × $0.0025 + 1 container × $0.03 + 1 low 1024² mini image × $0.005.
    const toolsRecord = proxy.fake.requests.find(
      (r) => (r.body as { stream?: boolean; input: string }).stream === undefined && (r.body as { input: string }).input === 'Search, compute, draw.',
    )!;
    const tools = toolsRecord.billed;
    check(
      toolsRecord,
      micros(
        [
          [tools.promptTokens, 2],
          [tools.completionTokens, 8],
        ],
        20_000 + 2_500 + 30_000 + 5_000,
      ),
      { tool_cost_micros: 57_500 },
    );

    // Streamed: web_search_preview on a non-reasoning model is $25 / 1k calls; gpt-4.1 priority $3.50 / $14.
    const streamed = proxy.fake.requests.find((r) => (r.body as { input: string }).input === 'Search twice.')!;
    check(
      streamed,
      micros(
        [
          [streamed.billed.promptTokens, 3.5],
          [streamed.billed.completionTokens, 14],
        ],
        2 * 25_000,
      ),
      { service_tier: 'priority', tool_cost_micros: 50_000 },
    );
  });

  it('bills a chat search model its search on every request', async () => {
    const before = proxy.fake.requests.length;
    await client.chat.completions.create({ model: 'gpt-4o-search-preview', messages });
    const [record] = proxy.fake.requests.slice(before);
    const rows = await settledRows(proxy, before + 1);
    // $2.50 / $10 per 1M tokens + one search at $25 / 1k.
    expect(rowOf(rows, record!)).toMatchObject({
      cost_micros: micros(
        [
          [record!.billed.promptTokens, 2.5],
          [record!.billed.completionTokens, 10],
        ],
        25_000,
      ),
      tool_cost_micros: 25_000,
    });
  });

  it('reserves what the request asks for: the priority tier and audio output', async () => {
    const before = proxy.fake.requests.length;
    await client.chat.completions.create({ model: 'gpt-5', messages, service_tier: 'priority', max_completion_tokens: 1_000 });
    await client.chat.completions.create({
      model: 'gpt-4o-audio-preview',
      messages,
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'wav' },
      max_tokens: 1_000,
    });
    const [priority, audio] = proxy.fake.requests.slice(before);
    const rows = await settledRows(proxy, before + 2);
    const priorityRow = rowOf(rows, priority!);
    // Reserved: the prompt at $2.50 plus 1000 completion tokens at $20 (priority).
    expect(priorityRow.est_cost_micros).toBe(
      micros([
        [Number(priorityRow.est_prompt_tokens), 2.5],
        [1_000, 20],
      ]),
    );
    const audioRow = rowOf(rows, audio!);
    // Reserved: the prompt at $2.50 plus 1000 completion tokens at $80 (audio output).
    expect(audioRow.est_cost_micros).toBe(
      micros([
        [Number(audioRow.est_prompt_tokens), 2.5],
        [1_000, 80],
      ]),
    );
  });
});

describe('unknown models', () => {
  it('are refused with TOLLGATE_UNKNOWN_MODELS=refuse: a 400 model_not_found, recorded, never sent', async () => {
    const proxy = await startTestProxy({ TOLLGATE_UNKNOWN_MODELS: 'refuse' });
    try {
      const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
      const error = await client.chat.completions.create({ model: 'my-llama-70b', messages }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error).toMatchObject({ status: 400, code: 'model_not_found', param: 'model' });
      // Known models still pass.
      await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
      expect(proxy.fake.requests.map((r) => (r.body as { model: string }).model)).toEqual(['gpt-4o-mini']);
      const database = openDatabase(proxy.dbPath);
      try {
        await waitFor(() => database.sqlite.prepare("SELECT 1 FROM ledger WHERE model = 'my-llama-70b'").get() !== undefined, 'the refusal to be recorded');
        expect(database.sqlite.prepare("SELECT status, http_status, error_code, cost_micros FROM ledger WHERE model = 'my-llama-70b'").get()).toEqual({
          status: 'rejected',
          http_status: 400,
          error_code: 'model_not_found',
          cost_micros: 0,
        });
      } finally {
        database.close();
      }
    } finally {
      await proxy.close();
    }
  });

  it('are reserved and billed at the highest prices by default, and at a configured fallback only for keys without a USD cap', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-prices-'));
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify({ prices: { fallback: { input: 0.1, output: 0.2 } } }));
    const plain = await startTestProxy();
    // The fallback for capped keys is an explicit choice: by default they are refused an unpriced model.
    const configured = await startTestProxy({ TOLLGATE_CONFIG: configPath, TOLLGATE_UNKNOWN_MODELS: 'fallback' });
    try {
      const budgeted = configured.issueKey('budgeted', { limits: [], budget: { microUsd: 50_000_000, period: 'day' } });
      const ask = (proxy: TestProxy, key: string) =>
        new OpenAI({ baseURL: proxy.baseURL, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: 'my-llama-70b', messages, max_tokens: 50 });
      await ask(plain, plain.key);
      await ask(plain, plain.key);
      await ask(configured, configured.key);
      await ask(configured, budgeted);
      const highest = { input: 150, output: 600 }; // o1-pro, the dearest built-in row of each
      const rowsOf = async (proxy: TestProxy, count: number) => [...(await settledRows(proxy, count)).values()];

      const [plainRow] = await rowsOf(plain, 2);
      expect(plainRow).toMatchObject({ price_known: 0 });
      expect(plainRow!.est_cost_micros).toBe(
        micros([
          [Number(plainRow!.est_prompt_tokens), highest.input],
          [50, highest.output],
        ]),
      );
      expect(plainRow!.cost_micros).toBe(
        micros([
          [Number(plainRow!.prompt_tokens), highest.input],
          [Number(plainRow!.completion_tokens), highest.output],
        ]),
      );
      // The operator hears of the missing price once, not once per request.
      const warnings = plain.logs.lines.filter((line) => line.assumption === 'unknown-model');
      expect(warnings).toEqual([expect.objectContaining({ level: 'warn', model: 'my-llama-70b', priceEntry: 'my-llama-70b' })]);

      const rows = await rowsOf(configured, 2);
      const [fallbackRow, strictRow] = [...rows].sort((a, b) => Number(a.est_cost_micros) - Number(b.est_cost_micros));
      expect(fallbackRow!.est_cost_micros).toBe(
        micros([
          [Number(fallbackRow!.est_prompt_tokens), 0.1],
          [50, 0.2],
        ]),
      );
      expect(strictRow!.est_cost_micros).toBe(
        micros([
          [Number(strictRow!.est_prompt_tokens), highest.input],
          [50, highest.output],
        ]),
      );
      // The budgeted key's row is the strict one.
      const database = openDatabase(configured.dbPath);
      try {
        const budgetedId = (database.sqlite.prepare("SELECT id FROM api_keys WHERE name = 'budgeted'").get() as { id: string }).id;
        expect(strictRow!.key_id).toBe(budgetedId);
      } finally {
        database.close();
      }
    } finally {
      await plain.close();
      await configured.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
