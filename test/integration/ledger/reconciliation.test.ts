/**
 * The ledger against the upstream's bill: over a mixed run — JSON, streams
 * with and without the client's own usage chunk, n > 1, cached and reasoning
 * tokens, every endpoint, client aborts, streams broken or silent midway,
 * timeouts before headers, 5xx and 429 — the ledger's tokens and integer
 * micro-dollars equal what the fake upstream billed, request by request and
 * in total, and the rollups and `tollgate spend` equal the ledger.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import { openDatabase } from '../../../src/db/open.js';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/prices.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_UPSTREAM_HEADERS_TIMEOUT: '1s', TOLLGATE_UPSTREAM_IDLE_TIMEOUT: '1s' });
  client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
});
afterAll(async () => {
  await proxy.close();
});

const messages = [
  { role: 'system' as const, content: 'You count things for a living.' },
  { role: 'user' as const, content: 'How many foxes jump over how many dogs?', name: 'tester' },
];
const scenario = (value: string) => ({ headers: { 'x-fake-scenario': value } });
const settle = <T>(promise: Promise<T>): Promise<T | 'failed'> => promise.catch(() => 'failed' as const);

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // read to the end (or until it throws)
  }
}

/**
 * The client aborts on the `chunks`-th piece of content. The fake generates
 * exactly that many and then waits, so what was generated and what the proxy
 * saw are the same by construction, not by timing.
 */
async function abortAfter(chunks: number, model: string): Promise<void> {
  const stream = await client.chat.completions.create({ model, messages, stream: true }, scenario(`hangAfter=${chunks},words=60`));
  let seen = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) seen += 1;
    if (seen === chunks) stream.controller.abort();
  }
}

it('bills every request exactly what the upstream billed, to the token and the micro-dollar', async () => {
  await Promise.all([
    // JSON, with the upstream's usage block
    client.chat.completions.create({ model: 'gpt-4o-mini', messages }),
    client.chat.completions.create({ model: 'gpt-4o', messages, n: 2 }),
    client.chat.completions.create({ model: 'gpt-4.1-mini', messages }, scenario('cached=12')),
    client.chat.completions.create({ model: 'o4-mini', messages }, scenario('reasoning=40')),
    client.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: ['one', 'two'] }),
    client.embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta', 'gamma'] }),
    client.responses.create({ model: 'gpt-4.1', input: 'Summarise foxes.' }),
    // streams: usage injected and stripped, or asked for by the client
    client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true }).then(drain),
    client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true, n: 2 }).then(drain),
    client.chat.completions.create({ model: 'gpt-4o', messages, stream: true, stream_options: { include_usage: true } }).then(drain),
    client.chat.completions.create({ model: 'gpt-5-mini', messages, stream: true }, scenario('reasoning=25,cached=5')).then(drain),
    client.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Once', stream: true }).then(drain),
    client.responses.create({ model: 'gpt-4.1-mini', input: 'Stream please', stream: true }).then(drain),
    // the client walks away mid-stream: charged prompt + what was streamed
    settle(abortAfter(4, 'gpt-4o-mini')),
    settle(abortAfter(9, 'gpt-4o')),
    // the upstream breaks or goes silent mid-stream
    settle(client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true }, scenario('breakAfter=5')).then(drain)),
    settle(client.chat.completions.create({ model: 'gpt-4o', messages, stream: true }, scenario('delay=10,hangAfter=3')).then(drain)),
    // the upstream takes too long to answer: it was working, the prompt is billed
    settle(client.chat.completions.create({ model: 'gpt-4o-mini', messages }, scenario('headersDelay=3000'))),
    // the upstream refuses: nothing billed
    settle(client.chat.completions.create({ model: 'gpt-4o', messages }, scenario('status=500'))),
    settle(client.chat.completions.create({ model: 'gpt-4o', messages, stream: true }, scenario('status=503'))),
    settle(client.chat.completions.create({ model: 'gpt-4o', messages }, scenario('status=429'))),
  ]);
  await proxy.fake.settled();

  const database = openDatabase(proxy.dbPath);
  try {
    await waitFor(
      () => (database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status = 'pending'").get() as { n: number }).n === 0,
      'every request to settle',
    );
    const rows = database.sqlite.prepare('SELECT * FROM ledger').all() as Array<Record<string, number | string | null>>;
    const byId = new Map(rows.map((row) => [row.request_id as string, row]));
    expect(proxy.fake.requests).toHaveLength(21);

    let billedCost = 0;
    let billedPrompt = 0;
    let billedCompletion = 0;
    for (const record of proxy.fake.requests) {
      const id = String(record.headers['x-client-request-id']);
      const row = byId.get(id);
      expect(row, `ledger row for ${record.path} ${JSON.stringify(record.headers['x-fake-scenario'] ?? '')}`).toBeDefined();
      const model = (record.body as { model: string }).model;
      const cost = costMicroUsd(record.billed, resolvePrice(model, builtinPriceTable));
      const what = `${model} ${String(record.headers['x-fake-scenario'] ?? 'plain')} → ${String(row!.status)}`;
      expect({ prompt: row!.prompt_tokens, cached: row!.cached_tokens, completion: row!.completion_tokens, cost: row!.cost_micros }, what).toEqual({
        prompt: record.billed.promptTokens,
        cached: record.billed.cachedTokens,
        completion: record.billed.completionTokens,
        cost,
      });
      billedCost += cost;
      billedPrompt += record.billed.promptTokens;
      billedCompletion += record.billed.completionTokens;
    }
    expect(billedCost).toBeGreaterThan(0);

    const statuses = rows.map((r) => r.status).sort();
    expect(statuses).toEqual(
      expect.arrayContaining([
        'ok',
        'client_aborted',
        'client_aborted',
        'upstream_interrupted',
        'upstream_timeout',
        'upstream_timeout',
        'upstream_error',
        'upstream_error',
        'upstream_error',
      ]),
    );

    // The rollups and the CLI say the same.
    const rollup = database.sqlite
      .prepare(
        'SELECT sum(cost_micros) AS cost, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, sum(requests) AS requests FROM rollups_daily',
      )
      .get();
    expect(rollup).toEqual({ cost: billedCost, prompt: billedPrompt, completion: billedCompletion, requests: 21 });
    const spend = await cli('--db', proxy.dbPath, 'spend', '--by', 'model', '--json');
    const report = spend.json<{ total: { costMicros: number; requests: number; errors: number }; rows: Array<{ group: string; costMicros: number }> }>();
    expect(report.total.costMicros).toBe(billedCost);
    expect(report.total.requests).toBe(21);
    expect(report.rows.reduce((sum, row) => sum + row.costMicros, 0)).toBe(billedCost);
  } finally {
    database.close();
  }
});
