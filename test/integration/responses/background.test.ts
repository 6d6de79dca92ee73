/**
 * Background Responses stay reserved until their final usage is known, and
 * Tollgate settles them itself: by polling the upstream whether or not the
 * client polls, at once when the client's own poll shows the job finished,
 * after a restart, after a client left the job's stream, and at the
 * reservation when polling gives up.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { RateLimitError } from 'openai';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { costMicroUsd, estimateRequestSync, resolvePrice } from '../../../src/estimate/index.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe } from '../../support/process.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';
import { startHarness, scenario, UPSTREAM_KEY, type Harness } from './harness.js';

let fake: FakeUpstream;
const open: Harness[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
});
afterEach(async () => {
  for (const harness of open.splice(0)) await harness.close();
});
afterAll(async () => {
  await fake.close();
});

async function harness(env: Record<string, string> = {}, dbPath = tempDatabasePath().path): Promise<Harness> {
  const started = await startHarness(fake, dbPath, env);
  open.push(started);
  return started;
}

/** What the fake upstream billed for the request Tollgate forwarded as `requestId`. */
function billedFor(requestId: string) {
  const record = fake.requests.find((r) => r.method === 'POST' && r.headers['x-client-request-id'] === requestId);
  if (record === undefined) throw new Error(`the upstream never saw ${requestId}`);
  return record.billed;
}

/** The upstream's price of what it billed, as the ledger must record it. */
function costOf(h: Harness, model: string, billed: ReturnType<typeof billedFor>): number {
  return costMicroUsd(billed, resolvePrice(model, h.tollgate.config.prices));
}

/** GETs of a response the poller made (the client's own go through the lifecycle route and carry its request id). */
function pollerGets(id: string): number {
  return fake.requests.filter((r) => r.method === 'GET' && r.path === `/v1/responses/${id}` && r.headers['x-client-request-id'] === undefined).length;
}

/** Rollups of the key behind a ledger row: what budgets read. */
function rollupOf(h: Harness, requestId: string): { requests: number; cost: number } {
  return h.tollgate.database.sqlite
    .prepare('SELECT sum(requests) AS requests, sum(cost_micros) AS cost FROM rollups_daily WHERE key_id = (SELECT key_id FROM ledger WHERE request_id = ?)')
    .get(requestId) as { requests: number; cost: number };
}

const MODEL = 'gpt-4o-mini';

/** Whether Tollgate still has to settle a background response (its row in the `responses` table). */
function unsettled(h: Harness, id: string): boolean {
  return (h.tollgate.database.sqlite.prepare('SELECT unsettled FROM responses WHERE id = ?').get(id) as { unsettled: number }).unsettled === 1;
}

describe('settled by Tollgate itself', () => {
  // One proxy for the tests that use the default polling settings (starting one takes a second).
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(fake, tempDatabasePath().path);
  });
  afterAll(async () => {
    await h.close();
  });

  it('a background response is settled with its real usage without the client polling', async () => {
    const client = h.client(h.issueKey('no-polling'));
    const created = await client.responses.create({ model: MODEL, input: 'Tell me about foxes.', background: true }, scenario('jobMs=150,words=20'));
    expect(created.status).toBe('queued');
    expect(created.usage).toBeNull();
    const requestId = created._request_id!;
    // Reserved while the job runs: the row stays pending with its estimate.
    expect(h.ledgerRow(requestId)?.status).toBe('pending');

    await waitFor(() => h.ledgerRow(requestId)?.status === 'ok', 'the background job to be settled', 20_000);
    const billed = billedFor(requestId);
    expect(billed.completionTokens).toBe(20);
    expect(h.ledgerRow(requestId)).toMatchObject({
      prompt_tokens: billed.promptTokens,
      completion_tokens: 20,
      cost_micros: costOf(h, MODEL, billed),
      usage_source: 'reported',
      error_code: null,
    });
    expect(pollerGets(created.id)).toBeGreaterThan(0);
    expect(h.tollgate.responses.poller.polling).toBe(0);
    // Nobody has to poll it again once its settlement is on disk.
    await waitFor(() => !unsettled(h, created.id), 'the job to leave the unsettled ones', 20_000);
    expect(rollupOf(h, requestId)).toEqual({ requests: 1, cost: costOf(h, MODEL, billed) });
  });

  it('a client polling a finished job settles it once, at once, and the poller stops', async () => {
    // The poller would wait ten minutes: only the client's own poll can settle the job here.
    const h = await harness({ TOLLGATE_BACKGROUND_POLL_INITIAL: '10m', TOLLGATE_BACKGROUND_POLL_MAX_INTERVAL: '10m' });
    const client = h.client(h.issueKey('polling'));
    const created = await client.responses.create({ model: MODEL, input: 'Poll me.', background: true }, scenario('jobMs=40'));
    const requestId = created._request_id!;
    expect(h.tollgate.responses.poller.polling).toBe(1);
    let seen = created;
    for (let attempt = 0; attempt < 1000 && seen.status !== 'completed'; attempt += 1) seen = await client.responses.retrieve(created.id);
    expect(seen.status).toBe('completed');
    // Settled before the client even had the answer.
    expect(h.tollgate.responses.poller.polling).toBe(0);
    await waitFor(() => h.ledgerRow(requestId)?.status === 'ok', 'the settlement to be committed', 20_000);
    const cost = costOf(h, MODEL, billedFor(requestId));
    expect(h.ledgerRow(requestId)?.cost_micros).toBe(cost);

    // Polling again changes nothing: settled exactly once.
    await client.responses.retrieve(created.id);
    h.tollgate.ledger.flush();
    expect(rollupOf(h, requestId)).toEqual({ requests: 1, cost });
    expect(pollerGets(created.id)).toBe(0);
  });

  it('a client leaving a background stream neither cancels the job nor bills the partial text: the job is settled by polling', async () => {
    const client = h.client(h.issueKey('streamer'));
    const { data: stream, response } = await client.responses
      .create({ model: MODEL, input: 'Stream a long answer.', background: true, stream: true }, scenario('delay=20,words=30,jobMs=50'))
      .withResponse();
    const requestId = response.headers.get('x-request-id')!;
    let deltas = 0;
    let id = '';
    for await (const event of stream) {
      if (event.type === 'response.created') id = event.response.id;
      if (event.type === 'response.output_text.delta' && ++deltas === 3) break; // the client goes away
    }
    expect(id).toMatch(/^resp_/);
    await waitFor(() => h.ledgerRow(requestId)?.status === 'ok', 'the job to be settled by polling', 20_000);
    const billed = billedFor(requestId);
    // The whole job ran and was billed, not the three streamed words.
    expect(billed.completionTokens).toBe(30);
    expect(h.ledgerRow(requestId)).toMatchObject({ completion_tokens: 30, cost_micros: costOf(h, MODEL, billed) });
    expect((await client.responses.retrieve(id)).status).toBe('completed');
  });

  it('a background stream that runs to its end is settled from its own usage, with nothing left to poll', async () => {
    const client = h.client(h.issueKey('whole-stream'));
    const { data: stream, response } = await client.responses
      .create({ model: MODEL, input: 'Stream it all.', background: true, stream: true }, scenario('words=8'))
      .withResponse();
    let id = '';
    for await (const event of stream) if (event.type === 'response.created') id = event.response.id;
    const requestId = response.headers.get('x-request-id')!;
    await waitFor(() => h.ledgerRow(requestId)?.status === 'ok', 'the stream to be settled', 20_000);
    expect(h.ledgerRow(requestId)?.completion_tokens).toBe(8);
    // Nothing left to poll.
    await waitFor(() => !unsettled(h, id), 'the job to leave the unsettled ones', 20_000);
    expect(pollerGets(id)).toBe(0);
  });

  it('a background stream broken before its id arrived is billed its reservation: nobody can poll the job', async () => {
    const client = h.client(h.issueKey('no-id'));
    const { data: stream, response } = await client.responses
      .create({ model: MODEL, input: 'Lost at once.', background: true, stream: true }, scenario('breakAtStart=1'))
      .withResponse();
    // The client gets the proxy's error event (or a broken stream), never a response id.
    const events: string[] = [];
    try {
      for await (const event of stream) events.push(event.type);
    } catch {
      // the SDK may raise the error event instead of yielding it
    }
    expect(events).not.toContain('response.created');
    const requestId = response.headers.get('x-request-id')!;
    await waitFor(() => h.ledgerRow(requestId)?.status !== 'pending', 'the stream to be settled', 20_000);
    const row = h.ledgerRow(requestId)!;
    expect(row).toMatchObject({ error_code: 'background_response_unknown' });
    expect(row.cost_micros).toBe(row.est_cost_micros);
  });

  it('a job still running at the polling deadline is settled at its reservation, and logged', async () => {
    const h = await harness({ TOLLGATE_BACKGROUND_POLL_TIMEOUT: '300ms' });
    const client = h.client(h.issueKey('slow-job'));
    const created = await client.responses.create({ model: MODEL, input: 'Take forever.', background: true }, scenario('jobMs=600000'));
    const requestId = created._request_id!;
    await waitFor(() => h.ledgerRow(requestId)?.status !== 'pending', 'polling to give up', 20_000);
    const row = h.ledgerRow(requestId)!;
    expect(row).toMatchObject({ status: 'upstream_timeout', error_code: 'background_poll_gave_up' });
    expect(row.cost_micros).toBe(row.est_cost_micros);
    expect(h.logs.lines.some((line) => line.errorCode === 'background_poll_gave_up' && line.requestId === requestId)).toBe(true);
  });

  it('a failed job bills nothing; an incomplete one its usage', async () => {
    const client = h.client(h.issueKey('endings'));
    const failed = await client.responses.create({ model: MODEL, input: 'Fail.', background: true }, scenario('jobMs=30,jobEnd=failed'));
    const incomplete = await client.responses.create({ model: MODEL, input: 'Stop short.', background: true }, scenario('jobMs=30,jobEnd=incomplete'));
    await waitFor(
      () => h.ledgerRow(failed._request_id!)?.status !== 'pending' && h.ledgerRow(incomplete._request_id!)?.status !== 'pending',
      'both jobs to be settled',
      20_000,
    );
    expect(h.ledgerRow(failed._request_id!)).toMatchObject({ status: 'upstream_error', cost_micros: 0, error_code: 'server_error' });
    const billed = billedFor(incomplete._request_id!);
    expect(h.ledgerRow(incomplete._request_id!)).toMatchObject({
      status: 'ok',
      completion_tokens: billed.completionTokens,
      cost_micros: costOf(h, MODEL, billed),
      error_code: 'incomplete:max_output_tokens',
    });
  });

  it('a cancelled job bills what its usage says: nothing', async () => {
    const client = h.client(h.issueKey('canceller'));
    const created = await client.responses.create({ model: MODEL, input: 'Never mind.', background: true }, scenario('jobMs=600000'));
    expect((await client.responses.cancel(created.id)).status).toBe('cancelled');
    const requestId = created._request_id!;
    await waitFor(() => h.ledgerRow(requestId)?.status !== 'pending', 'the cancelled job to be settled', 20_000);
    expect(h.ledgerRow(requestId)).toMatchObject({ status: 'client_aborted', cost_micros: 0, error_code: 'response_cancelled' });
  });
});

describe('reserved until settled', () => {
  it("a background job's reservation blocks further spend until it is settled", async () => {
    const h = await harness();
    const body = { model: MODEL, input: 'Budgeted work.', max_output_tokens: 1000 };
    const reservation = estimateRequestSync('responses', body, {
      prices: h.tollgate.config.prices,
      defaultMaxCompletionTokens: h.tollgate.config.defaultMaxCompletionTokens,
    }).reservedMicroUsd;
    // Room for one reservation and a few micro-dollars more: far below any useful request.
    const client = h.client(h.issueKey('budgeted', { limits: [], budget: { microUsd: reservation + 5, period: 'day' } }));
    const job = await client.responses.create({ ...body, background: true }, scenario('jobMs=600000'));
    expect(job.status).toBe('queued');

    const refused = await client.responses.create(body).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(RateLimitError);
    expect((refused as RateLimitError).code).toBe('insufficient_quota');

    // Cancelled, the job costs nothing: its reservation goes back to the budget.
    await client.responses.cancel(job.id);
    await waitFor(() => h.ledgerRow(job._request_id!)?.status === 'client_aborted', 'the cancelled job to be settled', 20_000);
    const next = await client.responses.create(body);
    expect(next.status).toBe('completed');
  });
});

describe('restarts', () => {
  it('a job left pending by a stopped process is settled by the next one', async () => {
    const { path } = tempDatabasePath();
    // The first process never gets to poll: it stops while the job runs.
    const first = await startHarness(fake, path, { TOLLGATE_BACKGROUND_POLL_INITIAL: '10m' });
    const key = first.issueKey('restarted');
    const created = await first.client(key).responses.create({ model: MODEL, input: 'Outlive the proxy.', background: true }, scenario('jobMs=300,words=16'));
    const requestId = created._request_id!;
    await first.close();
    const between = openDatabase(path);
    expect(between.sqlite.prepare('SELECT status FROM ledger WHERE request_id = ?').get(requestId)).toEqual({ status: 'pending' });
    between.close();

    const second = await harness({}, path);
    await waitFor(() => second.ledgerRow(requestId)?.status === 'ok', 'the new process to settle the job', 20_000);
    const billed = billedFor(requestId);
    expect(billed.completionTokens).toBe(16);
    expect(second.ledgerRow(requestId)).toMatchObject({ completion_tokens: 16, cost_micros: costOf(second, MODEL, billed) });
    expect(rollupOf(second, requestId)).toEqual({ requests: 1, cost: costOf(second, MODEL, billed) });
    expect(second.logs.lines.some((line) => line.msg === 'taking over an unsettled background response')).toBe(true);
    // The key still sees its response through the new process.
    expect((await second.client(key).responses.retrieve(created.id)).status).toBe('completed');
  });

  it('a job of a process killed with SIGKILL is taken over once its claim lapses', async () => {
    const { path } = tempDatabasePath();
    const setup = openDatabase(path);
    const key = new KeyStore(setup).createKey({ name: 'crashed', policy: { limits: [] } }).key;
    setup.close();
    // The process would poll only after ten minutes; its claims last 4 × 50 ms.
    const proc = await spawnServe({
      TOLLGATE_UPSTREAM_URL: fake.url,
      TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
      TOLLGATE_DB: path,
      TOLLGATE_BACKGROUND_POLL_INITIAL: '10m',
      TOLLGATE_BACKGROUND_POLL_MAX_INTERVAL: '100ms',
    });
    const client = new OpenAI({ baseURL: `${proc.url}/v1`, apiKey: key, maxRetries: 0 });
    let requestId: string;
    try {
      const created = await client.responses.create({ model: MODEL, input: 'Outlive a crash.', background: true }, scenario('jobMs=200,words=9'));
      requestId = created._request_id!;
      // Its row is on disk (it is written in the turn after the answer) before the kill.
      const reader = openDatabase(path);
      await waitFor(() => reader.sqlite.prepare('SELECT 1 FROM responses WHERE id = ?').get(created.id) !== undefined, 'the response to be remembered');
      reader.close();
    } finally {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }

    const next = await harness({}, path);
    await waitFor(() => next.ledgerRow(requestId)?.status === 'ok', 'the next process to take the job over', 20_000);
    const billed = billedFor(requestId);
    expect(billed.completionTokens).toBe(9);
    expect(next.ledgerRow(requestId)).toMatchObject({ completion_tokens: 9, cost_micros: costOf(next, MODEL, billed) });
  });
});
