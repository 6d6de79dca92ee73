/**
 * Endings that once billed nothing: an error event after content in a 200
 * stream, and an upstream whose headers, first chunks and reset arrive
 * together. What arrived is relayed; the request is billed its reservation,
 * as any answer that ends before its usage (src/pipeline/settle.ts, rule 4):
 * the upstream may have generated more than it sent — hidden reasoning —
 * and only its usage would say how much.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

interface Row {
  status: string;
  http_status: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
  est_cost_micros: number;
  usage_source: string;
}

function rowOf(proxy: TestProxy, requestId: string): Row | undefined {
  const database = openDatabase(proxy.dbPath);
  try {
    return database.sqlite
      .prepare(
        "SELECT status, http_status, prompt_tokens, completion_tokens, cost_micros, est_cost_micros, usage_source FROM ledger WHERE request_id = ? AND status != 'pending'",
      )
      .get(requestId) as Row | undefined;
  } finally {
    database.close();
  }
}

async function chat(proxy: TestProxy, stream: boolean, scenario = ''): Promise<{ status: number; text: string; requestId: string }> {
  const res = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream, max_tokens: 50 }),
  });
  return { status: res.status, text: await res.text(), requestId: res.headers.get('x-request-id')! };
}

describe('an error event after content in a 200 stream', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy();
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('bills its reservation, at least what the upstream billed for the prompt, the reasoning and the text', async () => {
    const answer = await chat(proxy, true, 'errorAfter=3,reasoning=20');
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"server_error"');
    await waitFor(() => rowOf(proxy, answer.requestId) !== undefined, 'the request to settle');
    const row = rowOf(proxy, answer.requestId)!;
    const billed = proxy.fake.requests.at(-1)!.billed;
    expect(billed.completionTokens).toBe(23);
    // max_tokens 50, reserved and billed: the error event carried no usage.
    expect(row).toMatchObject({ status: 'upstream_error', completion_tokens: 50, usage_source: 'reserved' });
    expect(row.cost_micros).toBe(row.est_cost_micros);
    expect(row.cost_micros).toBeGreaterThan(costMicroUsd(billed, resolvePrice('gpt-4o-mini', builtinPriceTable)));
  });
});

describe('an upstream that sends headers, its first chunks and a reset together', () => {
  const chunk = (word: string) =>
    `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"${word}"},"finish_reason":null}]}\n\n`;
  const body = chunk('Hello') + chunk(' world');
  const response = `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n`;
  const endings: Record<string, (socket: Socket) => void> = {
    'reset in the same write': (socket) => {
      socket.write(response);
      socket.resetAndDestroy();
    },
    'reset once written': (socket) => socket.write(response, () => socket.resetAndDestroy()),
    'closed without the last chunk': (socket) => socket.end(response),
  };
  let server: Server;
  let proxy: TestProxy;
  let ending = endings['reset in the same write']!;
  beforeAll(async () => {
    server = createServer((socket) => socket.once('data', () => ending(socket)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = await startTestProxy({ TOLLGATE_UPSTREAM_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` });
  });
  afterAll(async () => {
    await proxy.close();
    await new Promise((resolve) => server.close(resolve));
  });

  for (const [name, end] of Object.entries(endings)) {
    for (const stream of [true, false]) {
      it(`relays what arrived and bills the reservation (${name}, client ${stream ? 'streaming' : 'asking for JSON of a stream'})`, async () => {
        ending = end;
        const answer = await chat(proxy, stream);
        expect(answer.status).toBe(200);
        expect(answer.text).toContain('"Hello"');
        expect(answer.text).toContain('" world"');
        await waitFor(() => rowOf(proxy, answer.requestId) !== undefined, 'the request to settle');
        const row = rowOf(proxy, answer.requestId)!;
        expect(row).toMatchObject({ status: 'upstream_interrupted', http_status: 200, completion_tokens: 50, usage_source: 'reserved' });
        expect(row.cost_micros).toBe(row.est_cost_micros);
      });
    }
  }
});
