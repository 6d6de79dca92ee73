/** Upstream faults the reconciliation test does not cover, each settled correctly in the ledger. */
import { afterAll, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';
import { withoutReceipt } from '../../support/receipt.js';

const proxies: TestProxy[] = [];
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
});

async function lastRow(proxy: TestProxy): Promise<Record<string, unknown>> {
  const database = openDatabase(proxy.dbPath);
  try {
    let row: Record<string, unknown> | undefined;
    await waitFor(() => {
      row = database.sqlite.prepare('SELECT * FROM ledger ORDER BY created_at DESC LIMIT 1').get() as Record<string, unknown> | undefined;
      return row !== undefined && row.status !== 'pending';
    }, 'the request to settle');
    return row!;
  } finally {
    database.close();
  }
}

function chat(proxy: TestProxy, body: Record<string, unknown>, scenario = ''): Promise<Response> {
  return fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

it('a refused connection is a 502 and costs nothing', async () => {
  const port = await new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port: free } = server.address() as { port: number };
      server.close(() => resolve(free));
    });
  });
  const proxy = await startTestProxy({ TOLLGATE_UPSTREAM_URL: `http://127.0.0.1:${port}/v1` });
  proxies.push(proxy);
  const res = await chat(proxy, {});
  expect(res.status).toBe(502);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_unreachable');
  const row = await lastRow(proxy);
  expect(row).toMatchObject({ status: 'upstream_interrupted', cost_micros: 0, prompt_tokens: 0, usage_source: 'none', error_code: 'upstream_unreachable' });
});

it('garbage inside an SSE stream is passed through and the usage still settles the request', async () => {
  const proxy = await startTestProxy();
  proxies.push(proxy);
  const res = await chat(proxy, { stream: true }, 'garbage=1,words=5');
  const text = await res.text();
  expect(text).toContain('data: {not json}');
  expect(withoutReceipt(text).trimEnd().endsWith('data: [DONE]')).toBe(true);
  const row = await lastRow(proxy);
  expect(row).toMatchObject({ status: 'ok', completion_tokens: 5, usage_source: 'reported' });
  expect(row.cost_micros).toBeGreaterThan(0);
});

it('a 429 from upstream passes through with its headers and costs nothing', async () => {
  const proxy = await startTestProxy();
  proxies.push(proxy);
  const res = await chat(proxy, {}, 'status=429');
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
  const row = await lastRow(proxy);
  expect(row).toMatchObject({ status: 'upstream_error', http_status: 429, cost_micros: 0, error_code: 'rate_limit_exceeded' });
});
