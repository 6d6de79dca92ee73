/**
 * A budget is a hard cap (README, "Budgets are hard caps"): whatever the
 * request — a reasoning model, no max_tokens, streams, concurrency — the
 * spend recorded in the period never exceeds it, the upstream's own bill does
 * not either, and the budget is used (requests are capped, not refused).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { BUDGET_MICRO_USD, ledgerTotals, runBudgetMix, upstreamBill } from '../../support/budget-run.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

const settled = () => waitFor(() => ledgerTotals([proxy.dbPath]).pending === 0, 'every admitted request to settle');

it('holds a $0.05 day budget against a reasoning model asked without max_tokens, and uses it', async () => {
  const key = proxy.issueKey('reasoner', { limits: [], budget: { microUsd: BUDGET_MICRO_USD, period: 'day' } });
  const result = await runBudgetMix([proxy.baseURL], key);
  await proxy.fake.settled();
  await settled();
  const ledger = ledgerTotals([proxy.dbPath]);
  const bill = upstreamBill(proxy.fake);
  expect(ledger.cost).toBeLessThanOrEqual(BUDGET_MICRO_USD);
  expect(bill).toBeLessThanOrEqual(BUDGET_MICRO_USD);
  expect(ledger.cost).toBe(bill);
  // Capped to what the budget affords, not refused: the budget is spent nearly whole.
  expect(result.capped.length).toBeGreaterThanOrEqual(1);
  expect(result.capped.every((tokens) => tokens >= 1024 && tokens < 100_000)).toBe(true);
  expect(ledger.cost).toBeGreaterThan(BUDGET_MICRO_USD * 0.9);
  expect(result.admitted + result.refused).toBe(12);
  // The cap reached the upstream as the request's own limit.
  const limits = proxy.fake.requests.map((r) => (r.body as { max_completion_tokens?: number }).max_completion_tokens);
  expect(limits.filter((l) => l !== undefined)).toEqual(result.capped);
}, 30_000);

it('cuts a stream at its cost cap when the upstream ignores the limit: the SDK ends normally, the ledger has what was generated', async () => {
  const key = proxy.issueKey('cut', { limits: [] });
  const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: key, maxRetries: 0 });
  const before = proxy.fake.requests.length;
  // $0.001 of gpt-4o-mini ($0.60 / 1M out) pays for ~1,600 completion tokens; the upstream would send 2,500, a token a millisecond.
  const stream = await client.chat.completions.create(
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Count forever.' }], stream: true, stream_options: { include_usage: true } },
    { headers: { 'x-fake-scenario': 'ignoreLimit=1,words=2500,delay=1', 'x-tollgate-max-cost-usd': '0.001' } },
  );
  let text = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  expect(finish).toBe('length');
  const words = text.split(' ').length;
  expect(words).toBeGreaterThan(1000);
  expect(words).toBeLessThan(2500);
  await settled();
  const request = proxy.fake.requests[before]!;
  await waitFor(() => request.closedEarly || request.finished, 'the upstream to see the cut');
  expect(request.finished).toBe(false); // stopped, not run to the end
  const row = ledgerTotals([proxy.dbPath]).rows.at(-1)!;
  expect(row.cost_micros).toBeLessThanOrEqual(1000);
  // The SDK got the usage it asked for: what was relayed, which is what the ledger bills.
  expect(usage?.completion_tokens).toBe(words);
  expect(row.cost_micros).toBeGreaterThan(900);
}, 30_000);
