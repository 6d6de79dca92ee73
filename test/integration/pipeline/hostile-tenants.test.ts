/**
 * A careless or hostile tenant against the real server: client
 * chosen strings stay bounded wherever they are stored or labelled, and
 * refusals are throttled and recorded compactly.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peekEncoding } from '../../../src/estimate/tokenizer.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_LOG_LEVEL: 'warn' });
});
afterAll(async () => {
  await proxy.close();
});

async function chat(key: string, model: string, headers: Record<string, string> = {}): Promise<{ status: number; code: string | undefined }> {
  const res = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
  });
  const json = (await res.json()) as { error?: { code: string; param: string | null } };
  return { status: res.status, code: json.error?.code };
}

/** Runs `count` requests, `concurrency` at a time. */
async function many(count: number, concurrency: number, send: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await send(next++);
    }),
  );
}

describe('start', () => {
  it('loads every tokenizer the price table uses before the server listens', () => {
    expect(peekEncoding('o200k_base')).toBeDefined();
    expect(peekEncoding('cl100k_base')).toBeDefined();
  });
});

describe('model names', () => {
  it('refuses a name that is too long or has characters no model name has, with a 400 naming the field', async () => {
    for (const model of ['m'.repeat(257), 'gpt-4o\n', 'gpt 4o', '<script>', '-leading-dash', 'gpt-4o\u0000x']) {
      const res = await fetch(`${proxy.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status, JSON.stringify(model)).toBe(400);
      const body = (await res.json()) as { error: { code: string; param: string; type: string } };
      expect(body.error).toMatchObject({ code: 'invalid_value', param: 'model', type: 'invalid_request_error' });
    }
    // Real names of every shape still pass.
    for (const model of ['gpt-4o-mini', 'ft:gpt-4o-mini:acme::abc123', 'meta-llama/Llama-3-8B-Instruct', 'llama3:8b', 'm'.repeat(256)]) {
      expect((await chat(proxy.key, model)).status, model).toBe(200);
    }
  });

  it('keeps /metrics under 1 MB and the ledger small after thousands of distinct long model names', async () => {
    const allowList = proxy.issueKey('allow-list', { limits: [], models: ['gpt-4o-mini'] });
    // Distinct names the proxy refuses (too long), names the key may not use
    // (403), and names it forwards but no price table knows.
    const started = Date.now();
    await many(1200, 16, (i) => chat(proxy.key, `${i}-${'x'.repeat(2000)}`));
    await many(800, 16, (i) => chat(allowList, `not-allowed-${i}-${'y'.repeat(200)}`));
    await many(100, 16, (i) => chat(proxy.key, `unknown-${i}-${'z'.repeat(200)}`));
    // Each key's allowance of raw refusal rows: 60, refilling one a second.
    const allowance = 60 + Math.ceil((Date.now() - started) / 1000) + 10;

    const metrics = await (await fetch(`${proxy.server.url}/metrics`)).text();
    expect(metrics.length).toBeLessThan(1024 * 1024);
    expect(metrics).not.toContain('xxxxxxxxxx');
    expect(metrics).not.toContain('not-allowed-');
    expect(metrics).not.toContain('unknown-');
    expect(metrics).toContain('model="other"');

    const db = new Database(proxy.dbPath, { readonly: true });
    try {
      // Refusals: a raw row each only within the key's allowance, every one counted.
      const refused = db.prepare("SELECT count(*) AS n, max(length(model)) AS longest FROM ledger WHERE status IN ('rejected', 'invalid_request')").get() as {
        n: number;
        longest: number;
      };
      expect(refused.n).toBeLessThanOrEqual(2 * allowance);
      expect(refused.longest).toBeLessThanOrEqual(64);
      const rollups = db.prepare('SELECT coalesce(sum(errors), 0) AS errors, count(*) AS rows FROM rollups_daily WHERE requests = 0');
      // The last refusals commit a few milliseconds after their answers.
      await waitFor(() => (rollups.get() as { errors: number }).errors >= 2000, 'every refusal counted');
      const counted = rollups.get() as { errors: number; rows: number };
      // One rollup row per key for refused models the price table does not know.
      expect(counted.rows).toBeLessThanOrEqual(4);
    } finally {
      db.close();
    }
    // Two thousand requests: generous for a loaded CI machine.
  }, 120_000);
});

describe('refusals count against the request limit', () => {
  it('answers 429 once a key has spent its requests on refused bodies', async () => {
    const key = proxy.issueKey('refusal-limited', { limits: [{ name: 'rpm', unit: 'requests', amount: 5, period: 'min', burst: 5 }], models: ['gpt-4o-mini'] });
    const answers: Array<number> = [];
    for (let i = 0; i < 4; i += 1) answers.push((await chat(key, 'gpt-4o')).status);
    answers.push((await chat(key, 'bad name')).status);
    const limited = await chat(key, 'gpt-4o');
    expect(answers).toEqual([403, 403, 403, 403, 400]);
    expect(limited).toEqual({ status: 429, code: 'rate_limit_exceeded' });
    // An allowed request is limited like any other now.
    expect((await chat(key, 'gpt-4o-mini')).status).toBe(429);
  });

  it('charges a header weight of 0 as one request', async () => {
    const key = proxy.issueKey('weighted', {
      limits: [{ name: 'rpm', unit: 'requests', amount: 2, period: 'min', burst: 2, costSource: { kind: 'header', name: 'x-weight', default: 1 } }],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await chat(key, 'gpt-4o-mini', { 'x-weight': '0' })).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe('GET /v1/models', () => {
  it('is a request of its key: limited, and one ledger row', async () => {
    const key = proxy.issueKey('models-limited', { limits: [{ name: 'rpm', unit: 'requests', amount: 2, period: 'min', burst: 2 }] });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await fetch(`${proxy.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    const db = new Database(proxy.dbPath, { readonly: true });
    try {
      const query = db.prepare(
        "SELECT l.status, l.http_status AS http FROM ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.name = 'models-limited' ORDER BY l.request_id",
      );
      // Settlements and refusals commit a few milliseconds after the answer.
      const settled = (): boolean => {
        const rows = query.all() as Array<{ status: string }>;
        return rows.length === 3 && rows.every((row) => row.status !== 'pending');
      };
      await waitFor(settled, 'three settled rows');
      const rows = query.all();
      expect(rows).toEqual([
        { status: 'ok', http: 200 },
        { status: 'ok', http: 200 },
        { status: 'rejected', http: 429 },
      ]);
    } finally {
      db.close();
    }
  });
});

describe('a fair share of the upstream connections', () => {
  it('serves another key while one key holds eight slow streams on a four-connection pool', async () => {
    const pooled = await startTestProxy({ TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_UPSTREAM_CONNECTIONS: '4' });
    const slowKey = pooled.issueKey('slow-streams');
    const otherKey = pooled.issueKey('other');
    const controller = new AbortController();
    try {
      // Streams that would take minutes: they hold their connections for the whole test.
      const slow = Array.from({ length: 8 }, () =>
        fetch(`${pooled.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${slowKey}`, 'content-type': 'application/json', 'x-fake-scenario': 'delay=1000,words=500' },
          body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'slow' }] }),
          signal: controller.signal,
        }).catch(() => undefined),
      );
      await waitFor(() => pooled.fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length === 3, 'three of the slow streams upstream');
      const res = await fetch(`${pooled.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${otherKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'quick' }] }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      // Answered while every slow stream still holds or waits for a connection: none has ended.
      const upstream = pooled.fake.requests.filter((r) => r.path.endsWith('/chat/completions'));
      expect(upstream.filter((r) => r.finished)).toHaveLength(1);
      expect(upstream).toHaveLength(4);
      controller.abort();
      await Promise.all(slow);
    } finally {
      controller.abort();
      await pooled.close();
    }
  }, 60_000);
});

describe('/metrics for the operator only', () => {
  it('requires its bearer token and can live on its own port', async () => {
    const token = 'metrics-token-0123456789abcdef';
    const own = await startTestProxy({ TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_METRICS_TOKEN: token, TOLLGATE_METRICS_PORT: '0' });
    try {
      const metricsUrl = own.server.metricsUrl!;
      expect(metricsUrl).not.toBe(own.server.url);
      expect((await fetch(`${own.server.url}/metrics`)).status).toBe(404);
      const anonymous = await fetch(`${metricsUrl}/metrics`);
      expect(anonymous.status).toBe(401);
      expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe('invalid_metrics_token');
      expect((await fetch(`${metricsUrl}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
      const scraped = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toContain('tollgate_requests_total');
      expect((await fetch(`${metricsUrl}/v1/models`)).status).toBe(404);
    } finally {
      await own.close();
    }
  });
});

describe('requests in flight', () => {
  it('caps a key at its --max-in-flight: the next request waits, then gets a 429, and a slot frees when a request ends', async () => {
    const capped = await startTestProxy({ TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_QUEUE_TIMEOUT: '300ms' });
    try {
      const key = capped.issueKey('one-at-a-time', { limits: [], maxInFlight: 1 });
      const tenantKey = capped.issueKey('tenant-member', { limits: [] }, 'capped-tenant');
      const send = (k: string, scenario = '', signal?: AbortSignal): Promise<Response> =>
        fetch(`${capped.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
          body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
          ...(signal ? { signal } : {}),
        });
      const controller = new AbortController();
      const holding = await send(key, 'delay=500,words=5', controller.signal);
      expect(holding.status).toBe(200);
      const refused = await send(key);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/in flight/);
      // Another key is not held up.
      const other = await send(tenantKey);
      expect(other.status).toBe(200);
      await other.arrayBuffer();
      // Its client leaving does not free the slot: the request is read on to its usage (README,
      // "The ledger"); it frees once the request has ended upstream and is settled.
      controller.abort();
      await holding.arrayBuffer().catch(() => undefined);
      await waitFor(
        async () => {
          const res = await send(key);
          await res.arrayBuffer();
          return res.status === 200;
        },
        'the slot to come back',
        10_000,
      );
    } finally {
      await capped.close();
    }
  }, 60_000);
});
