/**
 * A receipt on every answer, end to end (real server, real SQLite, the fake upstream): a JSON
 * answer carries its cost and reservation in headers, a stream ends with them as an SSE comment
 * after its last event — OpenAI chat and Responses, Anthropic Messages — and either equals the
 * request's ledger row to the micro-dollar. The real `openai` and `@anthropic-ai/sdk` clients
 * read a stream ending in that comment as they read any other: no error, the same text.
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
