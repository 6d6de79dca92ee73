/**
 * A client who hangs up cannot spend without limit. Against a fake upstream
 * that bills as the real APIs do — hidden reasoning billed as it is generated, a JSON answer
 * finished and billed after its client left — every request's ledger row is at least what the
 * upstream billed for it, the key's budget holds, and a request read on after its client left
 * keeps its in-flight slot until it is settled (README, "The ledger", "Budgets are hard caps").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_UPSTREAM_IDLE_TIMEOUT: '2s' });
});
afterAll(async () => {
  await proxy.close();
});

const BUDGET = 50_000; // $0.05 a day, in µUSD

interface Row {
  request_id: string;
  status: string;
  model: string;
  usage_source: string | null;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cost_micros: number;
  est_cost_micros: number;
}

function rowsOf(requestIds: readonly string[]): Row[] {
  const database = openDatabase(proxy.dbPath);
  try {
    const select = database.sqlite.prepare('SELECT * FROM ledger WHERE request_id = ?');
    return requestIds.map((id) => select.get(id) as Row | undefined).filter((row): row is Row => row !== undefined);
  } finally {
    database.close();
  }
}

/** Every ledger row of the key named `name`. */
function rowsOfKey(name: string): Row[] {
  const database = openDatabase(proxy.dbPath);
  try {
    return database.sqlite.prepare('SELECT l.* FROM ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.name = ?').all(name) as Row[];
  } finally {
    database.close();
  }
}

async function settled(requestIds: readonly string[]): Promise<Row[]> {
  await waitFor(
    () => {
      const rows = rowsOf(requestIds);
      return rows.length === requestIds.length && rows.every((row) => row.status !== 'pending');
    },
    'every request to settle',
    15_000,
  );
  return rowsOf(requestIds);
}

/** The fake's own record of the request Tollgate forwarded as `requestId`. */
function upstreamOf(requestId: string): RecordedRequest | undefined {
  return proxy.fake.requests.find((record) => record.headers['x-client-request-id'] === requestId);
}

/** What the fake billed for a request, priced from the built-in table as the ledger prices it. */
function billOf(record: RecordedRequest, model: string): number {
  return costMicroUsd(record.billed, resolvePrice(model, builtinPriceTable));
}

type Endpoint = 'chat/completions' | 'responses' | 'messages';

interface Attack {
  readonly endpoint: Endpoint;
  readonly model: string;
  readonly body: Record<string, unknown>;
  readonly scenario: string;
}

interface Outcome {
  readonly status: number;
  readonly requestId: string;
  readonly code: string | undefined;
}

/** Sends a stream and hangs up after its first chunk (or takes its refusal). */
async function hangUp(key: string, attack: Attack): Promise<Outcome> {
  const controller = new AbortController();
  const response = await fetch(`${proxy.baseURL}/${attack.endpoint}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-fake-scenario': attack.scenario,
    },
    body: JSON.stringify({ model: attack.model, ...attack.body }),
    signal: controller.signal,
  }).catch((error: unknown) => error as Error);
  if (response instanceof Error) throw response;
  const requestId = response.headers.get('x-request-id')!;
  if (response.status !== 200) {
    const body = (await response.json()) as { error?: { code?: string; type?: string } };
    return { status: response.status, requestId, code: body.error?.code ?? body.error?.type };
  }
  await response.body!.getReader().read();
  controller.abort();
  return { status: 200, requestId, code: undefined };
}

/** A JSON request abandoned before its answer: the client leaves once the upstream has it. */
async function abandon(key: string, attack: Attack): Promise<string> {
  const controller = new AbortController();
  const seen = proxy.fake.requests.length;
  const pending = fetch(`${proxy.baseURL}/${attack.endpoint}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-fake-scenario': attack.scenario },
    body: JSON.stringify({ model: attack.model, ...attack.body }),
    signal: controller.signal,
  }).catch(() => undefined);
  await waitFor(() => proxy.fake.requests.length > seen, 'the upstream to take the request');
  const requestId = String(proxy.fake.requests[seen]!.headers['x-client-request-id']);
  controller.abort();
  await pending;
  return requestId;
}

/**
 * Waves of eight concurrent streams that hang up after their first chunk, until a whole wave
 * is refused: what a hostile client does to a key's budget.
 */
async function hangUpInWaves(key: string, attack: Attack): Promise<{ outcomes: Outcome[]; rows: Row[] }> {
  const outcomes: Outcome[] = [];
  for (let wave = 0; wave < 8; wave += 1) {
    const results = await Promise.all(Array.from({ length: 8 }, () => hangUp(key, attack)));
    outcomes.push(...results);
    await settled(results.map((result) => result.requestId));
    if (results.every((result) => result.status !== 200)) break;
  }
  const rows = await settled(outcomes.map((outcome) => outcome.requestId));
  return { outcomes, rows };
}

/** Each admitted request's row at least its upstream bill; spend and bill within the budget. */
function expectBudgetHeld(attack: Attack, outcomes: readonly Outcome[], rows: readonly Row[]): void {
  const admitted = rows.filter((row) => row.status !== 'rejected');
  let spent = 0;
  let billed = 0;
  for (const row of admitted) {
    const upstream = upstreamOf(row.request_id)!;
    const bill = billOf(upstream, attack.model);
    // The hidden reasoning was billed: the test means something.
    expect(upstream.billed.completionTokens, 'the upstream billed its reasoning').toBeGreaterThan(100);
    expect(row.cost_micros, `${row.request_id} ${row.status} ${row.usage_source}`).toBeGreaterThanOrEqual(bill);
    spent += row.cost_micros;
    billed += bill;
  }
  expect(admitted.length).toBeGreaterThanOrEqual(2);
  expect(spent).toBeLessThanOrEqual(BUDGET);
  expect(billed).toBeLessThanOrEqual(BUDGET);
  // Read on after the client left: settled at the usage the upstream reported.
  expect(admitted.every((row) => row.status === 'client_aborted' && row.usage_source === 'reported')).toBe(true);
  // Past the budget, refused as OpenAI refuses a spent quota (Anthropic's SDK reads the same status).
  const refused = outcomes.filter((outcome) => outcome.status !== 200);
  expect(refused.length).toBeGreaterThan(0);
  expect(refused.every((outcome) => outcome.status === 429)).toBe(true);
}

describe('eight concurrent streams that hang up after their first chunk, wave after wave', () => {
  // The first chunk comes before the reasoning: the client is gone while the upstream thinks.
  const reasoning = 'reasoning=2500,reasoningMs=300,delay=10,words=12';

  it('on /v1/chat/completions: each row at least the upstream bill, the budget held', async () => {
    const key = proxy.issueKey('hang-up-chat', { limits: [], budget: { microUsd: BUDGET, period: 'day' } });
    const attack: Attack = {
      endpoint: 'chat/completions',
      model: 'o4-mini',
      body: { stream: true, max_completion_tokens: 4000, messages: [{ role: 'user', content: 'Prove it.' }] },
      scenario: reasoning,
    };
    const { outcomes, rows } = await hangUpInWaves(key, attack);
    expectBudgetHeld(attack, outcomes, rows);
    // The operator sees it: each request's log line, and the aborts counted by how they settled.
    const line = proxy.logs.lines.find((l) => l.msg === 'request' && l.requestId === rows.find((row) => row.status !== 'rejected')!.request_id);
    expect(line).toMatchObject({ outcome: 'client_aborted', usageSource: 'reported' });
    const metrics = await (await fetch(`${proxy.server.url}/metrics`)).text();
    const counted = Number(/^tollgate_client_aborts_total\{usage_source="reported"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(counted).toBeGreaterThanOrEqual(rows.filter((row) => row.status === 'client_aborted').length);
  });

  it('on /v1/responses: each row at least the upstream bill, the budget held', async () => {
    const key = proxy.issueKey('hang-up-responses', { limits: [], budget: { microUsd: BUDGET, period: 'day' } });
    const attack: Attack = {
      endpoint: 'responses',
      model: 'o4-mini',
      body: { stream: true, max_output_tokens: 4000, input: 'Prove it.' },
      scenario: reasoning,
    };
    const { outcomes, rows } = await hangUpInWaves(key, attack);
    expectBudgetHeld(attack, outcomes, rows);
  });

  it('on /v1/messages: each row at least the upstream bill, thinking it never showed included, the budget held', async () => {
    const key = proxy.issueKey('hang-up-messages', { limits: [], budget: { microUsd: BUDGET, period: 'day' } });
    const attack: Attack = {
      endpoint: 'messages',
      model: 'claude-opus-4-6',
      body: { stream: true, max_tokens: 1200, messages: [{ role: 'user', content: 'Prove it.' }] },
      scenario: 'reasoning=500,reasoningMs=300,thinking=4,delay=10,words=12',
    };
    const { outcomes, rows } = await hangUpInWaves(key, attack);
    expectBudgetHeld(attack, outcomes, rows);
  });
});

describe('a JSON request abandoned before its answer', () => {
  for (const attack of [
    { endpoint: 'chat/completions', model: 'o4-mini', body: { messages: [{ role: 'user', content: 'Prove it.' }] }, scenario: 'reasoning=2000,delay=400' },
    { endpoint: 'responses', model: 'o4-mini', body: { input: 'Prove it.' }, scenario: 'reasoning=2000,delay=400' },
    {
      endpoint: 'messages',
      model: 'claude-opus-4-6',
      body: { max_tokens: 4000, messages: [{ role: 'user', content: 'Prove it.' }] },
      scenario: 'reasoning=2000,thinking=5,delay=400',
    },
  ] satisfies Attack[]) {
    it(`is billed the upstream's full bill (${attack.endpoint})`, async () => {
      const requestId = await abandon(proxy.key, attack);
      const [row] = await settled([requestId]);
      const upstream = upstreamOf(requestId)!;
      // Tollgate read the answer to its end: the upstream finished it, its connection never closed early.
      expect(upstream).toMatchObject({ closedEarly: false, finished: true });
      expect(upstream.billed.completionTokens).toBeGreaterThan(2000);
      expect(row).toMatchObject({
        status: 'client_aborted',
        usage_source: 'reported',
        prompt_tokens: upstream.billed.promptTokens,
        completion_tokens: upstream.billed.completionTokens,
        cost_micros: billOf(upstream, attack.model),
      });
    });
  }
});

describe('a stream of a reasoning model that the upstream breaks', () => {
  it('is billed its reservation, at least the reasoning and the text the upstream billed', async () => {
    const response = await fetch(`${proxy.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json', 'x-fake-scenario': 'reasoning=1500,breakAfter=3' },
      body: JSON.stringify({ model: 'o4-mini', stream: true, max_completion_tokens: 2000, messages: [{ role: 'user', content: 'Prove it.' }] }),
    });
    const text = await response.text();
    expect(text).toContain('interrupted');
    const requestId = response.headers.get('x-request-id')!;
    const [row] = await settled([requestId]);
    const upstream = upstreamOf(requestId)!;
    expect(upstream.billed).toMatchObject({ reasoningTokens: 1500, completionTokens: 1503 });
    expect(row).toMatchObject({ status: 'upstream_interrupted', usage_source: 'reserved', completion_tokens: 2000 });
    expect(row!.cost_micros).toBe(row!.est_cost_micros);
    expect(row!.cost_micros).toBeGreaterThanOrEqual(billOf(upstream, 'o4-mini'));
  });
});

describe('a burst of concurrent requests on one key that all hang up', () => {
  it('spends no more than the budget, and neither does the upstream: streams and JSON on both OpenAI endpoints', async () => {
    const key = proxy.issueKey('hang-up-burst', { limits: [], budget: { microUsd: BUDGET, period: 'day' } });
    // Reasoning billed at once, then a slow answer: every admitted request costs ~$0.011 upstream.
    const scenario = 'reasoning=2500,delay=300,words=4';
    const messages = [{ role: 'user', content: 'Prove it.' }];
    // 4,000 output tokens each: a few fit the budget at once, the rest are refused or capped.
    const attacks: Attack[] = [
      { endpoint: 'chat/completions', model: 'o4-mini', body: { stream: true, max_completion_tokens: 4000, messages }, scenario },
      { endpoint: 'chat/completions', model: 'o4-mini', body: { max_completion_tokens: 4000, messages }, scenario },
      { endpoint: 'responses', model: 'o4-mini', body: { stream: true, max_output_tokens: 4000, input: 'Prove it.' }, scenario },
      { endpoint: 'responses', model: 'o4-mini', body: { max_output_tokens: 4000, input: 'Prove it.' }, scenario },
    ];
    const send = (attack: Attack): Promise<unknown> => {
      if (attack.body.stream === true) return hangUp(key, attack);
      // JSON: the client leaves 100 ms in, before any answer (refusals come at once).
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      return fetch(`${proxy.baseURL}/${attack.endpoint}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': attack.scenario },
        body: JSON.stringify({ model: attack.model, ...attack.body }),
        signal: controller.signal,
      }).catch(() => undefined);
    };
    // Four rounds of six, each sent once the last one's clients have hung up.
    const burst: Array<Promise<unknown>> = [];
    for (let round = 0; round < 4; round += 1) {
      const sent = Array.from({ length: 6 }, (_, i) => send(attacks[i % attacks.length]!));
      burst.push(...sent);
      await Promise.race([Promise.all(sent), new Promise((resolve) => setTimeout(resolve, 150))]);
    }
    await Promise.all(burst);
    await waitFor(
      () => {
        const rows = rowsOfKey('hang-up-burst');
        return rows.length === 24 && rows.every((row) => row.status !== 'pending');
      },
      'all 24 requests to settle',
      15_000,
    );
    const rows = rowsOfKey('hang-up-burst');
    const admitted = rows.filter((row) => row.status !== 'rejected');
    expect(admitted.length).toBeGreaterThanOrEqual(2);
    expect(rows.some((row) => row.status === 'rejected')).toBe(true);
    let spent = 0;
    let billed = 0;
    for (const row of admitted) {
      const bill = billOf(upstreamOf(row.request_id)!, 'o4-mini');
      expect(row.cost_micros).toBeGreaterThanOrEqual(bill);
      spent += row.cost_micros;
      billed += bill;
    }
    expect(spent).toBeLessThanOrEqual(BUDGET);
    expect(billed).toBeLessThanOrEqual(BUDGET);
  });
});

describe('a request read on after its client left', () => {
  it('keeps its in-flight slot: the key’s next request waits until it is settled', async () => {
    const key = proxy.issueKey('one-at-a-time-drain', { limits: [], maxInFlight: 1 });
    const before = proxy.fake.requests.length;
    const first = await hangUp(key, {
      endpoint: 'chat/completions',
      model: 'gpt-4o-mini',
      body: { stream: true, messages: [{ role: 'user', content: 'Count.' }] },
      scenario: 'delay=30,words=30',
    });
    expect(first.status).toBe(200);
    const drained = proxy.fake.requests[before]!;
    const next = fetch(`${proxy.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Next.' }] }),
    });
    // The next request reaches the upstream only once the first was read to its usage and settled.
    await waitFor(() => proxy.fake.requests.length > before + 1, 'the next request upstream', 10_000);
    expect(drained.finished).toBe(true);
    expect(rowsOf([first.requestId])[0]).toMatchObject({ status: 'client_aborted', usage_source: 'reported', completion_tokens: 30 });
    expect((await next).status).toBe(200);
  });
});

describe('a stream read on after its client left, past what it may spend', () => {
  it('is cut there: its upstream aborted, settled at its reservation, within its cost cap', async () => {
    const before = proxy.fake.requests.length;
    const controller = new AbortController();
    // $0.001 of gpt-4o-mini output is ~1,600 tokens; the upstream ignores the limit and would send 3,000.
    const response = await fetch(`${proxy.baseURL}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${proxy.key}`,
        'content-type': 'application/json',
        'x-fake-scenario': 'ignoreLimit=1,words=3000,delay=1',
        'x-tollgate-max-cost-usd': '0.001',
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Count forever.' }] }),
      signal: controller.signal,
    });
    await response.body!.getReader().read();
    controller.abort();
    const [row] = await settled([response.headers.get('x-request-id')!]);
    const upstream = proxy.fake.requests[before]!;
    await waitFor(() => upstream.closedEarly, 'the upstream to be stopped');
    expect(upstream.finished).toBe(false);
    expect(row).toMatchObject({ status: 'client_aborted', usage_source: 'reserved', error_code: 'cost_cap_reached' });
    expect(row!.cost_micros).toBeLessThanOrEqual(1000);
    // Stopped near the cap, not run to its 3,000 words (an upstream that ignores its limit bills
    // the few tokens in flight past the cut: README, "Budgets are hard caps").
    expect(upstream.billed.completionTokens).toBeLessThan(2000);
  });
});

describe('a client that leaves before its request was sent', () => {
  it('is never sent and costs nothing, even while it waited for an upstream connection', async () => {
    // Two connections: one key may hold one, so its second request waits for it.
    const pooled = await startTestProxy({ TOLLGATE_UPSTREAM_CONNECTIONS: '2', TOLLGATE_LOG_LEVEL: 'warn' });
    try {
      const key = pooled.issueKey('waits-for-a-connection', { limits: [] });
      const send = (scenario: string, signal?: AbortSignal): Promise<Response> =>
        fetch(`${pooled.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
          body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
          ...(signal ? { signal } : {}),
        });
      const holding = await send('delay=100,words=10');
      const controller = new AbortController();
      const waiting = send('', controller.signal).catch(() => undefined);
      await waitFor(() => {
        const database = openDatabase(pooled.dbPath);
        try {
          return (database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status = 'pending'").get() as { n: number }).n === 2;
        } finally {
          database.close();
        }
      }, 'the second request to be admitted and wait');
      controller.abort();
      await waiting;
      await holding.text();
      const database = openDatabase(pooled.dbPath);
      try {
        await waitFor(
          () => (database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status = 'pending'").get() as { n: number }).n === 0,
          'both to settle',
        );
        const rows = database.sqlite.prepare('SELECT status, usage_source, cost_micros FROM ledger ORDER BY created_at').all();
        expect(rows).toEqual([
          { status: 'ok', usage_source: 'reported', cost_micros: expect.any(Number) },
          { status: 'client_aborted', usage_source: 'none', cost_micros: 0 },
        ]);
      } finally {
        database.close();
      }
      expect(pooled.fake.requests).toHaveLength(1);
    } finally {
      await pooled.close();
    }
  });
});
