/**
 * A receipt on every answer, end to end (real server, real SQLite, the fake upstream): a JSON
 * answer carries its cost and reservation in headers, a stream ends with them as an SSE comment
 * after its last event — OpenAI chat and Responses, Anthropic Messages — and either equals the
 * request's ledger row to the micro-dollar. The real `openai` and `@anthropic-ai/sdk` clients
 * read a stream ending in that comment as they read any other: no error, the same text. A request
 * read back by its id itemises its cost, Anthropic cache writes included.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

interface Row {
  status: string;
  cost_micros: number | null;
  est_cost_micros: number;
}

/** The request's ledger row once it is settled on disk. */
async function settledRow(requestId: string): Promise<Row> {
  const database = openDatabase(proxy.dbPath);
  try {
    let row: Row | undefined;
    await waitFor(() => {
      row = database.sqlite.prepare('SELECT status, cost_micros, est_cost_micros FROM ledger WHERE request_id = ?').get(requestId) as Row | undefined;
      return row !== undefined && row.status !== 'pending';
    }, `the ledger row of ${requestId}`);
    return row!;
  } finally {
    database.close();
  }
}

/** "0.000123" → 123, exactly. */
function micros(usd: string): number {
  const [whole = '', fraction = ''] = usd.split('.');
  expect(fraction).toHaveLength(6);
  return Number(whole) * 1_000_000 + Number(fraction);
}

const OPENAI_HEADERS = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const ANTHROPIC_HEADERS = (key: string) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' });

const CASES = [
  {
    name: 'OpenAI chat',
    path: '/v1/chat/completions',
    headers: OPENAI_HEADERS,
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi there' }] },
  },
  { name: 'OpenAI Responses', path: '/v1/responses', headers: OPENAI_HEADERS, body: { model: 'gpt-4.1-mini', input: 'Hi there' } },
  {
    name: 'Anthropic Messages',
    path: '/v1/messages',
    headers: ANTHROPIC_HEADERS,
    body: { model: 'claude-opus-4-6', max_tokens: 300, messages: [{ role: 'user', content: 'Hi there' }] },
  },
] as const;

describe('a receipt on every answer', () => {
  for (const { name, path, headers, body } of CASES) {
    it(`${name}: a JSON answer carries its cost and reservation in headers, equal to its ledger row`, async () => {
      const response = await fetch(`${proxy.server.url}${path}`, { method: 'POST', headers: headers(proxy.key), body: JSON.stringify(body) });
      expect(response.status).toBe(200);
      await response.json();
      const requestId = response.headers.get('x-request-id')!;
      const row = await settledRow(requestId);
      expect(row.status).toBe('ok');
      expect(row.cost_micros).toBeGreaterThan(0);
      expect(micros(response.headers.get('x-tollgate-cost-usd')!)).toBe(row.cost_micros);
      expect(micros(response.headers.get('x-tollgate-reserved-usd')!)).toBe(row.est_cost_micros);
    });

    it(`${name}: a stream ends with its receipt as an SSE comment after the last event, equal to its ledger row`, async () => {
      const response = await fetch(`${proxy.server.url}${path}`, {
        method: 'POST',
        headers: headers(proxy.key),
        body: JSON.stringify({ ...body, stream: true }),
      });
      expect(response.status).toBe(200);
      const text = await response.text();
      const requestId = response.headers.get('x-request-id')!;
      const events = text.split('\n\n').filter((event) => event !== '');
      const last = events.at(-1)!;
      const receipt = /^: tollgate cost_usd=(\d+\.\d{6}) reserved_usd=(\d+\.\d{6}) request_id=(\S+)$/.exec(last);
      expect(receipt, last).not.toBeNull();
      // The one comment, after every event.
      expect(events.filter((event) => event.startsWith(':'))).toHaveLength(1);
      const row = await settledRow(requestId);
      expect(row.status).toBe('ok');
      expect(row.cost_micros).toBeGreaterThan(0);
      expect(micros(receipt![1]!)).toBe(row.cost_micros);
      expect(micros(receipt![2]!)).toBe(row.est_cost_micros);
      expect(receipt![3]).toBe(requestId);
    });
  }

  it('an upstream error answer carries a receipt of nothing spent', async () => {
    const response = await fetch(`${proxy.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...OPENAI_HEADERS(proxy.key), 'x-fake-scenario': 'status=500' },
      body: JSON.stringify(CASES[0].body),
    });
    expect(response.status).toBe(500);
    const row = await settledRow(response.headers.get('x-request-id')!);
    expect(row.cost_micros).toBe(0);
    expect(response.headers.get('x-tollgate-cost-usd')).toBe('0.000000');
    expect(micros(response.headers.get('x-tollgate-reserved-usd')!)).toBe(row.est_cost_micros);
  });
});

/** GET /v1/tollgate/requests/{id} with `key`. */
async function lookUp(id: string, key: string): Promise<Response> {
  return fetch(`${proxy.server.url}/v1/tollgate/requests/${id}`, { headers: { authorization: `Bearer ${key}` } });
}

describe('a client reads its own request by its id', () => {
  it('gets its ledger row, with the receipt cost in parts that add up to it; another key gets 404', async () => {
    const response = await fetch(`${proxy.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...OPENAI_HEADERS(proxy.key), 'x-fake-scenario': 'cached=4,reasoning=30' },
      body: JSON.stringify({ model: 'o4-mini', messages: [{ role: 'user', content: 'How many foxes jump over how many dogs?' }] }),
    });
    await response.json();
    const requestId = response.headers.get('x-request-id')!;
    const row = await settledRow(requestId);

    const own = await lookUp(requestId, proxy.key);
    expect(own.status).toBe(200);
    const entry = (await own.json()) as Record<string, unknown> & { cost_items: Record<string, string>; usage: Record<string, number> };
    expect(entry).toMatchObject({ object: 'tollgate.request', id: requestId, endpoint: 'chat', model: 'o4-mini', status: 'ok', http_status: 200 });
    expect(entry.cost_usd).toBe(response.headers.get('x-tollgate-cost-usd'));
    expect(micros(entry.cost_usd as string)).toBe(row.cost_micros);
    expect(micros(entry.reserved_usd as string)).toBe(row.est_cost_micros);
    expect(entry.usage.cached_tokens).toBe(4);
    expect(entry.usage.reasoning_tokens).toBe(30);
    const items = entry.cost_items;
    expect(Object.keys(items).sort()).toEqual(
      [
        'audio_input_usd',
        'audio_output_usd',
        'cache_writes_usd',
        'cached_input_usd',
        'input_usd',
        'output_usd',
        'reasoning_usd',
        'tools_usd',
        'unitemised_usd',
      ].sort(),
    );
    expect(Object.values(items).reduce((sum, usd) => sum + micros(usd), 0)).toBe(row.cost_micros);
    // o4-mini: $1.10 input, $0.275 cached, $4.40 output per 1M tokens; each part rounded down, the whole once up.
    expect(micros(items.cached_input_usd!)).toBe(Math.floor((4 * 0.275e6) / 1e6));
    expect(micros(items.reasoning_usd!)).toBe(Math.floor((30 * 4.4e6) / 1e6));
    expect(micros(items.unitemised_usd!)).toBeGreaterThanOrEqual(0);
    expect(micros(items.unitemised_usd!)).toBeLessThanOrEqual(6);

    const other = proxy.issueKey('someone-else');
    await waitFor(async () => (await lookUp('req_nothing', other)).status === 404, 'the new key to be known');
    const foreign = await lookUp(requestId, other);
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await lookUp('req_unknown', proxy.key)).status).toBe(404);
    expect((await fetch(`${proxy.server.url}/v1/tollgate/requests/${requestId}`)).status).toBe(401);
  });

  it("itemises an Anthropic answer's cache writes at their premium, leaving nothing unitemised", async () => {
    // Breakpoints of both TTLs (1h before 5m, as the API requires): the fake writes only what has one.
    const body = {
      model: 'claude-opus-4-6',
      max_tokens: 300,
      system: [{ type: 'text', text: 'You answer riddles about foxes and dogs, briefly.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'How many foxes jump over how many dogs?', cache_control: { type: 'ephemeral' } }] }],
    };
    const response = await fetch(`${proxy.server.url}/v1/messages`, {
      method: 'POST',
      headers: { ...ANTHROPIC_HEADERS(proxy.key), 'x-fake-scenario': 'cacheRead=6,cacheWrite=8,cacheWrite1h=4' },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as { usage: Record<string, unknown> };
    expect(answer.usage).toMatchObject({
      cache_read_input_tokens: 6,
      cache_creation_input_tokens: 12,
      cache_creation: { ephemeral_5m_input_tokens: 8, ephemeral_1h_input_tokens: 4 },
    });
    const requestId = response.headers.get('x-request-id')!;
    const row = await settledRow(requestId);

    const entry = (await (await lookUp(requestId, proxy.key)).json()) as {
      cost_usd: string;
      cost_items: Record<string, string>;
      usage: Record<string, number>;
    };
    expect(micros(entry.cost_usd)).toBe(row.cost_micros);
    expect(entry.usage).toMatchObject({ cached_tokens: 6, cache_write_5m_tokens: 8, cache_write_1h_tokens: 4 });
    // Claude Opus 4.6 on Anthropic's pricing page, per 1M tokens: $5 input, $6.25 5-minute write
    // (1.25×), $10 1-hour write (2×), $0.50 cache read, $25 output. The counts make each part whole µUSD.
    const input = entry.usage.prompt_tokens! - 6 - 8 - 4;
    const items = entry.cost_items;
    expect(micros(items.cache_writes_usd!)).toBe(8 * 6.25 + 4 * 10);
    expect(micros(items.cached_input_usd!)).toBe(6 * 0.5);
    expect(micros(items.input_usd!)).toBe(input * 5);
    expect(micros(items.output_usd!)).toBe(entry.usage.completion_tokens! * 25);
    expect(items.unitemised_usd).toBe('0.000000');
    expect(Object.values(items).reduce((sum, usd) => sum + micros(usd), 0)).toBe(row.cost_micros);
  });
});

describe('the SDKs read a stream that ends with a receipt', () => {
  it('openai: chat and Responses streams parse without error, with the same text as the JSON answer', async () => {
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'Hi there' }];
    const whole = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true })) {
      streamed += chunk.choices[0]?.delta.content ?? '';
    }
    expect(streamed).toBe(whole.choices[0]!.message.content);

    const answer = await client.responses.create({ model: 'gpt-4.1-mini', input: 'Hi there' });
    let text = '';
    let completed = false;
    for await (const event of await client.responses.create({ model: 'gpt-4.1-mini', input: 'Hi there', stream: true })) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = true;
    }
    expect(completed).toBe(true);
    expect(text).toBe(answer.output_text);
  });

  it('@anthropic-ai/sdk: a Messages stream parses without error, with the same text as the JSON answer', async () => {
    const client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: proxy.key, maxRetries: 0 });
    const params = { model: 'claude-opus-4-6', max_tokens: 300, messages: [{ role: 'user' as const, content: 'Hi there' }] };
    const whole = await client.messages.create(params);
    const final = await client.messages.stream(params).finalMessage();
    const textOf = (message: Anthropic.Message): string => message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    expect(textOf(final)).toBe(textOf(whole));
    expect(final.stop_reason).toBe('end_turn');
  });
});
