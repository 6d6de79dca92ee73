/**
 * Anthropic's Messages API through Tollgate with the real `@anthropic-ai/sdk` as the client and
 * the fake upstream's Anthropic dialect behind it: JSON and streams, cache reads and writes,
 * thinking and tool use, aborts and upstream failures — the ledger equals the upstream's own
 * bill to the micro-dollar where the upstream reported its usage, and is at least that bill and
 * within the reservation where it never did; Tollgate's refusals come in Anthropic's error shape; budgets and
 * cost caps hold (output capped, streams cut as max_tokens would); count_tokens works; the key
 * works in `x-api-key` and as a bearer token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import type { FakeBilling } from '../../../src/demo/fake-upstream/index.js';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;
let client: Anthropic;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_UPSTREAM_IDLE_TIMEOUT: '2s' });
  client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: proxy.key, maxRetries: 0 });
});
afterAll(async () => {
  await proxy.close();
});

const MODEL = 'claude-opus-4-6';
const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'How many foxes jump over how many dogs?' }];
const scenario = (value: string) => ({ headers: { 'x-fake-scenario': value } });

/** Claude Opus 4.6 on Anthropic's pricing page, µUSD per token: input, 5m write, 1h write, cache read, output. */
function billOf(billed: FakeBilling): number {
  const w5m = billed.cacheWrite5mTokens ?? 0;
  const w1h = billed.cacheWrite1hTokens ?? 0;
  const input = billed.promptTokens - billed.cachedTokens - w5m - w1h;
  return Math.ceil((input * 5e6 + w5m * 6.25e6 + w1h * 10e6 + billed.cachedTokens * 0.5e6 + billed.completionTokens * 25e6) / 1e6);
}

interface Row {
  request_id: string;
  upstream_request_id: string | null;
  endpoint: string;
  model: string;
  status: string;
  http_status: number | null;
  prompt_tokens: number;
  cached_tokens: number;
  cache_write_5m_tokens: number | null;
  cache_write_1h_tokens: number | null;
  completion_tokens: number;
  cost_micros: number;
  est_cost_micros: number;
  error_code: string | null;
}

function rows(): Row[] {
  const database = openDatabase(proxy.dbPath);
  try {
    return database.sqlite.prepare('SELECT * FROM ledger ORDER BY created_at').all() as Row[];
  } finally {
    database.close();
  }
}

const settled = () => waitFor(() => rows().every((row) => row.status !== 'pending'), 'every request to settle');

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // read to the end (or until it throws)
  }
}

describe('the Messages API through Tollgate', () => {
  it('bills every answer exactly what the upstream billed, JSON and streamed, with cache reads and writes', async () => {
    const before = proxy.fake.requests.length;
    // Cache writes need breakpoints of their TTL (1h before 5m, as the API requires).
    const cached: Anthropic.MessageParam[] = [
      { role: 'user', content: [{ type: 'text', text: 'How many foxes jump over how many dogs?', cache_control: { type: 'ephemeral' } }] },
    ];
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'Answer briefly.', cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const json = await client.messages.create({ model: MODEL, max_tokens: 200, system, messages: cached }, scenario('cacheRead=5,cacheWrite=3,cacheWrite1h=4'));
    expect(json.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('quick brown fox') });
    expect(json.usage).toMatchObject({ cache_read_input_tokens: 5, cache_creation_input_tokens: 7, output_tokens: 12 });

    const stream = client.messages.stream(
      { model: MODEL, max_tokens: 300, system, messages, thinking: { type: 'enabled', budget_tokens: 100 } },
      scenario('thinking=6,tool=search,cacheRead=2,cacheWrite1h=3'),
    );
    const final = await stream.finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content[2]).toMatchObject({ name: 'search', input: { query: 'quick brown fox' } });

    // The SDK's raw stream too (with the client's own anthropic-version, passed through), and
    // the beta client (Claude Code's), which adds ?beta=true.
    await drain(await client.messages.create({ model: MODEL, max_tokens: 50, messages, stream: true }, { headers: { 'anthropic-version': '2023-06-01' } }));
    await client.beta.messages.create({ model: MODEL, max_tokens: 50, messages });
    // Truncated by the upstream at max_tokens: stop_reason max_tokens, billed as generated.
    const short = await client.messages.create({ model: MODEL, max_tokens: 5, messages });
    expect(short.stop_reason).toBe('max_tokens');
    expect(short.usage.output_tokens).toBe(5);

    await proxy.fake.settled();
    await settled();
    const served = proxy.fake.requests.slice(before);
    expect(served.map((request) => request.path)).toEqual(Array(5).fill('/v1/messages'));
    expect(served[2]!.headers['anthropic-version']).toBe('2023-06-01');
    const bill = served.map((request) => billOf(request.billed));
    const ledger = rows().slice(-5);
    expect(ledger.map((row) => row.cost_micros)).toEqual(bill);
    expect(ledger.map((row) => row.upstream_request_id)).toEqual(served.map((request) => request.id));
    expect(ledger.every((row) => row.endpoint === 'messages' && row.status === 'ok' && row.model === MODEL)).toBe(true);
    // The whole prompt, cache reads inside it.
    expect(ledger[0]).toMatchObject({
      prompt_tokens: served[0]!.billed.promptTokens,
      cached_tokens: 5,
      cache_write_5m_tokens: 3,
      cache_write_1h_tokens: 4,
      completion_tokens: 12,
    });
    expect(ledger[1]).toMatchObject({ cached_tokens: 2, cache_write_5m_tokens: 0, cache_write_1h_tokens: 3 });
    // Every reservation was an upper bound of what was billed.
    for (const row of ledger) expect(row.est_cost_micros).toBeGreaterThanOrEqual(row.cost_micros);
    // The upstream got the proxy's key and the client's anthropic-version, never the tenant's key.
    for (const request of served) {
      expect(request.headers['x-api-key']).toBe(UPSTREAM_KEY);
      expect(request.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(request.headers.authorization).toBeUndefined();
    }
  });

  it('charges a stream whose usage never came its reservation: client abort on a silent upstream, upstream break, error event; 529 nothing', async () => {
    const before = proxy.fake.requests.length;
    const aborted = (async () => {
      const stream = await client.messages.create({ model: MODEL, max_tokens: 200, messages, stream: true }, scenario('words=60,hangAfter=7,cacheRead=4'));
      let seen = 0;
      for await (const event of stream) {
        if (event.type === 'content_block_delta') seen += 1;
        if (seen === 7) stream.controller.abort();
      }
    })().catch(() => 'aborted');
    const broken = drain(await client.messages.create({ model: MODEL, max_tokens: 200, messages, stream: true }, scenario('breakAfter=5'))).catch(
      (error: unknown) => error,
    );
    const errored = drain(await client.messages.create({ model: MODEL, max_tokens: 200, messages, stream: true }, scenario('errorAfter=4'))).catch(
      (error: unknown) => error,
    );
    const overloaded = client.messages.create({ model: MODEL, max_tokens: 200, messages }, scenario('status=529')).catch((error: unknown) => error);
    const results = await Promise.all([aborted, broken, errored, overloaded]);
    expect(results[2]).toBeInstanceOf(Anthropic.APIError);
    expect(results[3]).toBeInstanceOf(Anthropic.APIError);
    expect((results[3] as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect((results[3] as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });

    await proxy.fake.settled();
    await settled();
    const served = proxy.fake.requests.slice(before);
    const ledger = rows().slice(-4);
    const byUpstreamId = new Map(ledger.map((row) => [row.upstream_request_id, row]));
    for (const request of served) {
      const row = byUpstreamId.get(request.id)!;
      // The prompt is exact (message_start reported it); the output generated before the end is
      // unknown (Claude bills thinking it may not show): the reservation's, max_tokens.
      expect(row.prompt_tokens).toBe(request.status === 529 ? 0 : request.billed.promptTokens);
      expect(row.completion_tokens).toBe(request.status === 529 ? 0 : 200);
      expect(row.cost_micros).toBeGreaterThanOrEqual(billOf(request.billed));
      expect(row.cost_micros).toBeLessThanOrEqual(row.est_cost_micros);
    }
    const statuses = served.map((request) => byUpstreamId.get(request.id)?.status).sort();
    expect(statuses).toEqual(['client_aborted', 'upstream_error', 'upstream_error', 'upstream_interrupted']);
    const overloadedRow = ledger.find((row) => row.http_status === 529)!;
    expect(overloadedRow).toMatchObject({ cost_micros: 0, error_code: 'overloaded_error' });
  });
});

describe("Tollgate's own answers on the Messages API", () => {
  it('accepts the key in x-api-key and as a bearer token (ANTHROPIC_AUTH_TOKEN), and refuses a wrong one as authentication_error', async () => {
    const bearer = new Anthropic({ baseURL: proxy.anthropicBaseURL, authToken: proxy.key, apiKey: null, maxRetries: 0 });
    await expect(bearer.messages.create({ model: MODEL, max_tokens: 10, messages })).resolves.toMatchObject({ type: 'message' });
    const wrong = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: 'tg-not-a-real-key', maxRetries: 0 });
    const error = await wrong.messages.create({ model: MODEL, max_tokens: 10, messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((error as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: 'Incorrect API key provided.' },
    });
    expect(JSON.stringify((error as Error).message)).not.toContain('tg-not-a-real-key');
  });

  it("answers a key's rate limit with 429 rate_limit_error and retry-after, which the SDK raises as RateLimitError", async () => {
    const key = proxy.issueKey('anthropic-rpm', { limits: [{ name: 'rpm', unit: 'requests', amount: 1, period: 'min', burst: 1 }] });
    const limited = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: key, maxRetries: 0 });
    await limited.messages.create({ model: MODEL, max_tokens: 10, messages });
    const error = await limited.messages.create({ model: MODEL, max_tokens: 10, messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const rateLimit = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(rateLimit.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(Number(rateLimit.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(rateLimit.headers?.get('x-tollgate-error-code')).toBe('rate_limit_exceeded');
  });

  it('refuses a body without max_tokens as invalid_request_error, and files it', async () => {
    const error = await client.messages.create({ model: MODEL, messages } as unknown as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const refusal = error as InstanceType<typeof Anthropic.BadRequestError>;
    expect(refusal.error).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } });
    await waitFor(() => rows().some((row) => row.request_id === refusal.requestID), 'the refusal to be filed');
    expect(rows().find((row) => row.request_id === refusal.requestID)).toMatchObject({ endpoint: 'messages', status: 'invalid_request', http_status: 400 });
  });

  it('counts tokens through the upstream, free, as one ledger row', async () => {
    const before = proxy.fake.requests.length;
    const counted = await client.messages.countTokens({ model: MODEL, messages, system: 'You count.' });
    expect(counted.input_tokens).toBeGreaterThan(5);
    expect(proxy.fake.requests[before]).toMatchObject({ path: '/v1/messages/count_tokens' });
    await settled();
    expect(rows().at(-1)).toMatchObject({ endpoint: 'count_tokens', model: MODEL, status: 'ok', cost_micros: 0 });
  });
});

describe('budgets and cost caps on the Messages API', () => {
  it("lowers a request's max_tokens to what its budget affords, saying so, and keeps the spend within the budget", async () => {
    // $0.05 of Opus 4.6 output ($25 / 1M) is 2,000 tokens: max_tokens 20,000 cannot be paid for.
    const key = proxy.issueKey('anthropic-budget', { limits: [], budget: { microUsd: 50_000, period: 'day' } });
    const budgeted = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: key, maxRetries: 0 });
    const before = proxy.fake.requests.length;
    const { data, response } = await budgeted.messages.create({ model: MODEL, max_tokens: 20_000, messages }).withResponse();
    expect(data.type).toBe('message');
    const capped = Number(response.headers.get('x-tollgate-output-capped'));
    expect(capped).toBeGreaterThanOrEqual(1024);
    expect(capped).toBeLessThan(2000);
    expect((proxy.fake.requests[before]!.body as { max_tokens: number }).max_tokens).toBe(capped);
    await settled();
    expect(rows().at(-1)!.cost_micros).toBeLessThanOrEqual(50_000);
  });

  it('refuses a used-up budget with 429 and x-should-retry: false, so the SDK does not retry', async () => {
    const key = proxy.issueKey('anthropic-spent', { limits: [], budget: { microUsd: 1_000, period: 'day' } });
    const retrying = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: key, maxRetries: 2 });
    const before = proxy.fake.requests.length;
    const error = await retrying.messages.create({ model: MODEL, max_tokens: 20_000, messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const refusal = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(refusal.headers?.get('x-should-retry')).toBe('false');
    expect(refusal.headers?.get('x-tollgate-error-code')).toBe('insufficient_quota');
    expect(proxy.fake.requests.length).toBe(before);
  });

  it('cuts a stream at its cost cap as max_tokens would: the SDK ends normally, stop_reason max_tokens, the ledger within the cap', async () => {
    const before = proxy.fake.requests.length;
    // $0.05 of Opus 4.6 output ($25 / 1M) pays for under 2,000 tokens; the upstream ignores max_tokens and would send 2,500 words.
    const stream = client.messages.stream(
      { model: MODEL, max_tokens: 8_000, messages },
      { headers: { 'x-fake-scenario': 'ignoreLimit=1,words=2500,delay=1', 'x-tollgate-max-cost-usd': '0.05' } },
    );
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('max_tokens');
    const text = final.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    const words = text.split(' ').length;
    expect(words).toBeGreaterThan(900);
    expect(words).toBeLessThan(2500);
    await settled();
    const request = proxy.fake.requests[before]!;
    await waitFor(() => request.closedEarly || request.finished, 'the upstream to see the cut');
    expect(request.finished).toBe(false);
    const row = rows().at(-1)!;
    expect(row.status).toBe('cut_at_cost_cap');
    expect(row.cost_micros).toBeLessThanOrEqual(50_000);
    // The output the SDK was told is what the ledger charged.
    expect(row.completion_tokens).toBe(final.usage.output_tokens);
    expect(row.cost_micros).toBeGreaterThan(45_000);
  });
});
