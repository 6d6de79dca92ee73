/** A model missing from the price table is billed at the fallback price and flagged in the ledger. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { builtinPriceTable, costMicroUsd } from '../../../src/estimate/prices.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';

let fake: FakeUpstream;
let upstream: Upstream;
let test: TestApp;

beforeAll(async () => {
  fake = await startFakeUpstream();
  upstream = createUpstream({ url: fake.url, apiKey: 'sk', connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 2 });
  test = buildTestApp({ upstream, logger: captureLogs().logger });
});
afterAll(async () => {
  test.close();
  await upstream.close();
  await fake.close();
});

it('flags the row and charges the fallback price', async () => {
  const key = test.issueKey('unknown-model');
  for (const model of ['acme-private-7b', 'gpt-4o-mini']) {
    const res = await test.app.request('http://tollgate.test/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }] }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  }
  test.ledger.flush();
  const rows = test.db.database.sqlite
    .prepare('SELECT model, price_known, prompt_tokens, completion_tokens, cost_micros FROM ledger ORDER BY model')
    .all() as Array<{ model: string; price_known: number; prompt_tokens: number; completion_tokens: number; cost_micros: number }>;
  expect(rows.map((r) => [r.model, r.price_known])).toEqual([
    ['acme-private-7b', 0],
    ['gpt-4o-mini', 1],
  ]);
  const unknown = rows[0]!;
  expect(unknown.cost_micros).toBe(
    costMicroUsd({ promptTokens: unknown.prompt_tokens, completionTokens: unknown.completion_tokens }, builtinPriceTable.fallback),
  );
  expect(unknown.cost_micros).toBeGreaterThan(0);
});
