/**
 * The ledger against the upstream's bill: over a mixed run — JSON, streams
 * with and without the client's own usage chunk, n > 1, cached and reasoning
 * tokens, every endpoint, client aborts, streams broken or silent midway,
 * timeouts before headers, 5xx and 429 — every request the upstream reported
 * usage for (clients that walked away included: Tollgate reads on to the
 * usage) has exactly the upstream's tokens and integer micro-dollars; every
 * one whose usage never came is billed its reservation, at least what the
 * upstream billed (README, "The ledger"); and the rollups and `tollgate spend`
 * equal the ledger.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
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
 * The client aborts on the `chunks`-th piece of content; the upstream goes on
 * generating (and billing) its whole answer, which Tollgate reads to its usage.
 */
async function abortAfter(chunks: number, model: string, more = ''): Promise<void> {
  const stream = await client.chat.completions.create({ model, messages, stream: true }, scenario(`delay=10,words=60${more}`));
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
    // the client walks away mid-stream: the upstream's whole answer, reasoning included
    settle(abortAfter(4, 'gpt-4o-mini')),
    settle(abortAfter(9, 'o4-mini', ',reasoning=30')),
    // the upstream breaks or goes silent mid-stream: the reservation
    settle(client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true }, scenario('breakAfter=5')).then(drain)),
    settle(client.chat.completions.create({ model: 'gpt-4o', messages, stream: true }, scenario('delay=10,hangAfter=3')).then(drain)),
    // the upstream takes too long to answer: it was working, the reservation is billed
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
    let ledgerCost = 0;
    let ledgerPrompt = 0;
    let ledgerCompletion = 0;
    let reserved = 0;
    for (const record of proxy.fake.requests) {
      const id = String(record.headers['x-client-request-id']);
      const row = byId.get(id);
      expect(row, `ledger row for ${record.path} ${JSON.stringify(record.headers['x-fake-scenario'] ?? '')}`).toBeDefined();
      const model = (record.body as { model: string }).model;
      const cost = costMicroUsd(record.billed, resolvePrice(model, builtinPriceTable));
      const what = `${model} ${String(record.headers['x-fake-scenario'] ?? 'plain')} → ${String(row!.status)}`;
      if (row!.usage_source === 'reserved') {
        // Its usage never came: billed its reservation, at least what the upstream billed.
        reserved += 1;
        expect(row!.cost_micros, what).toBe(row!.est_cost_micros);
        expect(row!.cost_micros, what).toBeGreaterThanOrEqual(cost);
      } else {
        expect({ prompt: row!.prompt_tokens, cached: row!.cached_tokens, completion: row!.completion_tokens, cost: row!.cost_micros }, what).toEqual({
          prompt: record.billed.promptTokens,
          cached: record.billed.cachedTokens,
          completion: record.billed.completionTokens,
          cost,
        });
      }
      billedCost += cost;
      ledgerCost += row!.cost_micros as number;
      ledgerPrompt += row!.prompt_tokens as number;
      ledgerCompletion += row!.completion_tokens as number;
    }
    // The broken stream, the silent one and the timeout before headers.
    expect(reserved).toBe(3);
    expect(ledgerCost).toBeGreaterThan(billedCost);
    expect(billedCost).toBeGreaterThan(0);

    // The clients that walked away: read on to the usage the upstream reported.
    expect(rows.filter((r) => r.status === 'client_aborted').map((r) => r.usage_source)).toEqual(['reported', 'reported']);

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
    expect(rollup).toEqual({ cost: ledgerCost, prompt: ledgerPrompt, completion: ledgerCompletion, requests: 21 });
    const spend = await cli('--db', proxy.dbPath, 'spend', '--by', 'model', '--json');
    const report = spend.json<{ total: { costMicros: number; requests: number; errors: number }; rows: Array<{ group: string; costMicros: number }> }>();
    expect(report.total.costMicros).toBe(ledgerCost);
    expect(report.total.requests).toBe(21);
    expect(report.rows.reduce((sum, row) => sum + row.costMicros, 0)).toBe(ledgerCost);
  } finally {
    database.close();
  }
});
