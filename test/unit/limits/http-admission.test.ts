/**
 * Limits and budgets at the HTTP level, in-process with a hand-moved clock for
 * the buckets: honest 429s with their headers, weighted costs settled at the
 * real usage, never-fits 400s, budgets the SDK stops retrying, tenant and
 * global levels, and rejections counted in the rollups.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { computeJitterFraction } from '../../../src/limits/index.js';
import { parseLimit, type Policy } from '../../../src/domain/policy.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs } from '../../support/logs.js';

let fake: FakeUpstream;
let upstream: Upstream;
let clock = 0;
const apps: TestApp[] = [];

function build(globalLimits: string[] = []): TestApp {
  const app = buildTestApp({ upstream, logger: captureLogs('warn').logger, limiterClock: () => clock, globalLimits: globalLimits.map(parseLimit) });
  apps.push(app);
  return app;
}

beforeAll(async () => {
  fake = await startFakeUpstream();
  upstream = createUpstream({ url: fake.url, apiKey: 'sk', connectTimeoutMs: 2000, headersTimeoutMs: 5000, idleTimeoutMs: 5000, connections: 8 });
});
afterAll(async () => {
  for (const app of apps) app.close();
  await upstream.close();
  await fake.close();
});

const message = [{ role: 'user' as const, content: 'hello' }];

function chat(
  app: TestApp,
  key: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  path = '/v1/chat/completions',
): Promise<Response> {
  return Promise.resolve(
    app.app.request(`http://tollgate.test${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: message, max_tokens: 50, ...body }),
    }),
  );
}

async function statusCodes(responses: Array<Promise<Response>>): Promise<number[]> {
  return Promise.all(
    responses.map(async (p) => {
      const res = await p;
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

/** An SDK whose fetch goes through the in-process app. */
function sdkFor(app: TestApp, key: string, maxRetries = 0): OpenAI {
  return new OpenAI({
    baseURL: 'http://tollgate.test/v1',
    apiKey: key,
    maxRetries,
    fetch: (url, init) => Promise.resolve(app.app.request(String(url), init as RequestInit)),
  });
}

describe('requests limit', () => {
  it('admits the burst, then answers 429 with Retry-After (jittered per key), retry-after-ms and RateLimit headers', async () => {
    const app = build();
    const key = app.issueKey('rpm', { limits: [parseLimit('requests:6/min,burst=3')] });
    const first = await chat(app, key);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"requests-per-min";q=3;w=30');
    expect(first.headers.get('ratelimit')).toMatch(/^"requests-per-min";r=2;t=\d+$/);
    expect(await statusCodes([chat(app, key), chat(app, key)])).toEqual([200, 200]);

    const refused = await chat(app, key);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(body.error.message).toContain('"requests-per-min"');
    expect(refused.headers.get('x-tollgate-limit')).toBe('requests-per-min');
    // One request refills in 10 s; the jitter for this key adds up to +50%, the same every time.
    const keyId = app.store.getKey('rpm').id;
    const expectedMs = Math.ceil(10_000 * (1 + computeJitterFraction(keyId)));
    expect(Number(refused.headers.get('retry-after-ms'))).toBe(expectedMs);
    expect(Number(refused.headers.get('retry-after'))).toBe(Math.ceil(expectedMs / 1000));
    expect(refused.headers.get('ratelimit')).toBe('"requests-per-min";r=0;t=10');

    clock += 10_000;
    expect((await chat(app, key)).status).toBe(200);
  });

  it("surfaces as the SDK's RateLimitError, and a refused request never reaches the upstream", async () => {
    const app = build();
    const key = app.issueKey('sdk-rpm', { limits: [parseLimit('requests:1/min')] });
    const client = sdkFor(app, key);
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: message });
    const before = fake.requests.length;
    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: message })).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(fake.requests.length).toBe(before);
  });

  it("reads a request's cost from a header, with a default when absent or not a number", async () => {
    const app = build();
    const policy: Policy = {
      limits: [
        { name: 'weighted', unit: 'requests', amount: 10, period: 'min', burst: 10, costSource: { kind: 'header', name: 'x-request-weight', default: 2 } },
      ],
    };
    const key = app.issueKey('header-cost', policy);
    expect((await chat(app, key, {}, { 'x-request-weight': '7' })).headers.get('ratelimit')).toMatch(/r=3;/);
    expect((await chat(app, key, {}, { 'x-request-weight': 'lots' })).headers.get('ratelimit')).toMatch(/r=1;/);
    expect((await chat(app, key)).status).toBe(429); // default 2 > 1 left
  });

  it('keeps Retry-After under the minute SDKs honour, and says the full wait in the message and x-tollgate-retry-after', async () => {
    const app = build();
    const perMinute = app.issueKey('one-per-min', { limits: [parseLimit('requests:1/min')] });
    expect((await chat(app, perMinute)).status).toBe(200);
    const refused = await chat(app, perMinute);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(Number(refused.headers.get('retry-after-ms'))).toBeLessThan(60_000);
    expect(refused.headers.get('x-tollgate-retry-after')).toBe('60');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'Rate limit reached for limit "requests-per-min". Try again in 1 min.',
    );

    const hourly = app.issueKey('two-per-hour', { limits: [parseLimit('requests:2/h,burst=1')] });
    expect((await chat(app, hourly)).status).toBe(200);
    const long = await chat(app, hourly);
    expect(long.status).toBe(429);
    expect(long.headers.get('retry-after')).toBe('60');
    expect(long.headers.get('x-tollgate-retry-after')).toBe('1800');
    expect(((await long.json()) as { error: { message: string } }).error.message).toContain('Try again in 30 min.');
    // A client that waits what it was told comes back early, and is told the remainder.
    clock += Number(long.headers.get('retry-after-ms'));
    const again = await chat(app, hourly);
    expect(again.status).toBe(429);
    expect(again.headers.get('x-tollgate-retry-after')).toBe('1741');
    expect(((await again.json()) as { error: { message: string } }).error.message).toContain('Try again in 29 min 1 s.');
    clock += 1_741_000;
    expect((await chat(app, hourly)).status).toBe(200);
  });

  it('starts an abuse-prone key empty when asked to', async () => {
    const app = build();
    const key = app.issueKey('empty', { limits: [parseLimit('requests:60/min,start=empty')] });
    expect((await chat(app, key)).status).toBe(429);
    clock += 1000;
    expect((await chat(app, key)).status).toBe(200);
  });
});

describe('token limits', () => {
  it('reserves prompt + max_tokens, then refunds what the answer did not use', async () => {
    const app = build();
    const key = app.issueKey('tpm', { limits: [parseLimit('tokens:1000/min')] });
    // Reserves ~8 prompt + 600 completion; the fake answers 12 tokens, so ~600 come back.
    expect((await chat(app, key, { max_tokens: 600 })).status).toBe(200);
    expect((await chat(app, key, { max_tokens: 600 })).status).toBe(200);
    const third = await chat(app, key, { max_tokens: 600 });
    expect(third.status).toBe(200);
    const remaining = Number(/r=(\d+)/.exec(third.headers.get('ratelimit') ?? '')?.[1]);
    // After settlement the bucket holds 1000 − 3 × (8 + 12) ≈ 940; the header shows it before this one settled.
    expect(remaining).toBeLessThan(1000 - 600);
    const fourth = await chat(app, key, { max_tokens: 900 });
    expect(fourth.status).toBe(200);
  });

  it('weights tokens per model', async () => {
    const app = build();
    const weighted = { ...parseLimit('tokens:1000/min'), modelWeights: { 'gpt-4o-mini': 1, 'gpt-4o': 10 } };
    const light = app.issueKey('weighted-light', { limits: [weighted] });
    const heavy = app.issueKey('weighted-heavy', { limits: [weighted] });
    // 8 prompt + 40 completion reserved: ×1 on gpt-4o-mini, ×10 on gpt-4o.
    expect((await chat(app, light, { model: 'gpt-4o-mini', max_tokens: 40 })).headers.get('ratelimit')).toMatch(/r=952;/);
    expect((await chat(app, heavy, { model: 'gpt-4o', max_tokens: 40 })).headers.get('ratelimit')).toMatch(/r=520;/);
    // (8 + 200) × 10 can never fit a burst of 1000.
    expect((await chat(app, heavy, { model: 'gpt-4o', max_tokens: 200 })).status).toBe(400);
  });

  it('refuses a request that can never fit with a 400, not an endless 429', async () => {
    const app = build();
    const key = app.issueKey('small-burst', { limits: [parseLimit('tokens:100/min')] });
    const res = await chat(app, key, { max_tokens: 500 });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('exceeds_limit_burst');
    expect(body.error.message).toMatch(/can never pass/);
    expect(res.headers.get('retry-after')).toBeNull();
  });
});

describe('budgets', () => {
  it('refuses with 429 insufficient_quota and x-should-retry: false, which the SDK does not retry', async () => {
    const app = build();
    // gpt-4o: $2.50 / $10 per 1M. 8 prompt + 50 completion reserve 520 µUSD; the answer
    // (12 tokens) settles at 140 µUSD. A budget of 600 µUSD holds the first reservation,
    // and then 140 spent + 520 reserved no longer fit.
    const key = app.issueKey('budgeted', { limits: [parseLimit('requests:100/min')], budget: { microUsd: 600, period: 'day' } });
    const ok = await chat(app, key, { model: 'gpt-4o' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-tollgate-budget-period')).toBe('day');
    expect(ok.headers.get('x-tollgate-budget-remaining-usd')).toBe('0.000080'); // 600 − 520, before it settled
    const client = sdkFor(app, key, 3);
    const before = fake.requests.length;
    const error = await client.chat.completions.create({ model: 'gpt-4o', messages: message, max_tokens: 50 }).catch((e: unknown) => e);
    expect(error, String(error)).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as { code?: string }).code).toBe('insufficient_quota');
    expect((error as { message: string }).message).toContain('$0.00014 of $0.0006 spent');
    // The limit's state, but no wait: no wait would help, and the SDK is told not to retry.
    const headers = (error as InstanceType<typeof OpenAI.APIError>).headers;
    expect(headers?.get('x-should-retry')).toBe('false');
    expect(headers?.get('ratelimit')).toMatch(/^"requests-per-min";r=\d+;t=\d+$/);
    for (const name of ['retry-after', 'retry-after-ms', 'x-tollgate-retry-after']) expect(headers?.get(name), name).toBeNull();
    expect(fake.requests.length).toBe(before);
    app.ledger.flush();
    const rows = app.db.database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE error_code = 'insufficient_quota'").get() as { n: number };
    expect(rows.n).toBe(1); // one refusal: the SDK did not retry
  });
});

describe('tenants and the global limit', () => {
  it("makes keys of one tenant share the tenant's limit, all or nothing", async () => {
    const app = build();
    app.store.createTenant('shared', { limits: [parseLimit('requests:3/min')] });
    const a = app.issueKey('tenant-a', { limits: [parseLimit('requests:100/min')] }, { tenant: 'shared' });
    const b = app.issueKey('tenant-b', { limits: [] }, { tenant: 'shared' });
    expect(await statusCodes([chat(app, a), chat(app, b), chat(app, a)])).toEqual([200, 200, 200]);
    const refused = await chat(app, b);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('tenant shared');
    // Key a's own bucket was not charged by the refused request (all or nothing).
    expect((await chat(app, a)).headers.get('x-tollgate-limit')).toBe('requests-per-min');
  });

  it('caps all keys together with the global limit', async () => {
    const app = build(['requests:2/min,name=global-rpm']);
    const a = app.issueKey('global-a');
    const b = app.issueKey('global-b');
    expect(await statusCodes([chat(app, a), chat(app, b)])).toEqual([200, 200]);
    const refused = await chat(app, a);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-tollgate-limit')).toBe('global-rpm');
  });
});

describe('rejections in the ledger', () => {
  it('counts rate-limit and budget refusals in the rollups, with their estimates, at no cost', async () => {
    const app = build();
    const key = app.issueKey('counted', { limits: [parseLimit('requests:1/min')], budget: { microUsd: 1_000_000, period: 'month' } });
    await statusCodes([chat(app, key), chat(app, key), chat(app, key)]);
    app.ledger.flush();
    const keyId = app.store.getKey('counted').id;
    const rollup = app.db.database.sqlite.prepare('SELECT requests, rejected_rate_limit, rejected_budget FROM rollups_daily WHERE key_id = ?').get(keyId);
    expect(rollup).toEqual({ requests: 1, rejected_rate_limit: 2, rejected_budget: 0 });
    const rejected = app.db.database.sqlite
      .prepare("SELECT est_cost_micros, cost_micros, http_status FROM ledger WHERE key_id = ? AND status = 'rejected'")
      .all(keyId) as Array<{ est_cost_micros: number; cost_micros: number; http_status: number }>;
    expect(rejected).toHaveLength(2);
    for (const row of rejected) {
      expect(row.est_cost_micros).toBeGreaterThan(0);
      expect(row.cost_micros).toBe(0);
      expect(row.http_status).toBe(429);
    }
  });
});
