/** /metrics after real traffic: the numbers, the conventions (promtool), and no secrets. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import OpenAI from 'openai';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

it('counts requests, tokens and spend per key name, passes promtool, and never shows a key', async () => {
  const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
  await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
  for await (const _ of stream) {
    // drain
  }
  await client.chat.completions
    .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-fake-scenario': 'status=500' } })
    .catch(() => undefined);
  await fetch(`${proxy.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${proxy.key}` }, body: '{bad' });

  let text = '';
  await waitFor(async () => {
    const res = await fetch(`${proxy.server.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    text = await res.text();
    return (sample(text, 'tollgate_requests_total', { key: 'default', model: 'gpt-4o-mini', outcome: 'ok' }) ?? 0) >= 2;
  }, 'metrics to show the requests');

  expect(sample(text, 'tollgate_requests_total', { key: 'default', model: 'gpt-4o-mini', endpoint: 'chat', outcome: 'ok' })).toBe(2);
  expect(sample(text, 'tollgate_requests_total', { key: 'default', model: 'gpt-4o', outcome: 'upstream_error' })).toBe(1);
  expect(sample(text, 'tollgate_rejections_total', { key: 'default', reason: 'invalid_json' })).toBe(1);
  expect(sample(text, 'tollgate_completion_tokens_total', { key: 'default', model: 'gpt-4o-mini' })).toBe(24);
  expect(sample(text, 'tollgate_spend_usd_total', { key: 'default', model: 'gpt-4o-mini' })).toBeGreaterThan(0);
  expect(sample(text, 'tollgate_time_to_first_token_seconds_count', { endpoint: 'chat' })).toBe(1);
  expect(sample(text, 'tollgate_prompt_estimate_ratio_count', { endpoint: 'chat' })).toBe(2);
  expect(sample(text, 'tollgate_ledger_rows_total', {})).toBeGreaterThan(0);
  expect(text).toContain('tollgate_process_cpu_seconds_total');

  expect(text).not.toContain(proxy.key);
  expect(text).not.toContain(UPSTREAM_KEY);

  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (promtool.error) throw new Error(`promtool is required for this test (apt-get install prometheus): ${promtool.error.message}`);
  expect(promtool.stdout + promtool.stderr).toBe('');
  expect(promtool.status).toBe(0);
});

it('samples the buckets of recently used keys, counts decisions, and shows live limits on the dashboard', async () => {
  const admin = 'metrics-admin-token-0123456789';
  const limited = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: admin });
  try {
    const key = limited.issueKey('limited', { limits: [{ name: 'rpm', unit: 'requests', amount: 10, period: 'min', burst: 10 }] });
    const client = new OpenAI({ baseURL: limited.baseURL, apiKey: key, maxRetries: 0 });
    for (let i = 0; i < 4; i += 1) await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const text = await (await fetch(`${limited.server.url}/metrics`)).text();
    expect(sample(text, 'tollgate_ratelimit_decisions_total', { limit: 'rpm', result: 'allowed' })).toBe(4);
    const fill = sample(text, 'tollgate_ratelimit_bucket_fill_ratio', { key: 'limited', limit: 'rpm' });
    expect(fill).toBeGreaterThanOrEqual(0.6);
    expect(fill).toBeLessThan(0.7); // 6 of 10 left (a refill of < 1 request since)
    expect(sample(text, 'tollgate_ratelimit_decision_duration_seconds_count', { store: 'local' })).toBe(4);

    const keyId = (
      (await (await fetch(`${limited.server.url}/admin/api/keys/limited`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { id: string }
    ).id;
    const page = (await (await fetch(`${limited.server.url}/admin/api/dashboard/keys/${keyId}`, { headers: { authorization: `Bearer ${admin}` } })).json()) as {
      limitsLive: boolean;
      limits: Array<{ name: string; remaining?: unknown }>;
    };
    expect(page.limitsLive).toBe(true);
    expect(JSON.stringify(page.limits)).toMatch(/"rpm"/);
    expect(JSON.stringify(page.limits)).toMatch(/\b6\b/);
  } finally {
    await limited.close();
  }
});
