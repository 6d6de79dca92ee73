/**
 * Anthropic's Message Batches through Tollgate, with the real `@anthropic-ai/sdk` against the fake
 * upstream's Message Batches API (docs/batches.md): a batch is checked and priced item by item,
 * admitted whole at its worst case before the upstream sees it (or refused, saying what it would
 * cost), and settled from its results once it has ended: the ledger row equals what the fake
 * billed at half price, cache writes included, to the micro-dollar — also when the client deletes
 * it first. A key sees only its own batches, listed in Anthropic's pages; a batch of two models is
 * refused, since its ledger row names one.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { batchPriceOf } from '../../../src/batches/batch-estimate.js';
import { costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';
import { startHarness, UPSTREAM_KEY, type Harness } from '../responses/harness.js';

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

/** A Tollgate in front of the fake, with its Anthropic upstream unless `withAnthropic` is false; its follower looks every `poll`. */
async function harness(withAnthropic = true, poll = '20ms'): Promise<Harness> {
  const anthropicUpstream = { TOLLGATE_ANTHROPIC_URL: `http://127.0.0.1:${fake.port}`, TOLLGATE_ANTHROPIC_KEY: UPSTREAM_KEY };
  const started = await startHarness(fake, tempDatabasePath().path, { TOLLGATE_BATCH_POLL: poll, ...(withAnthropic ? anthropicUpstream : {}) });
  open.push(started);
  return started;
}

/** Anthropic's SDK for a Tollgate key (its own key header, never a bearer from the environment). */
function anthropic(h: Harness, key: string): Anthropic {
  return new Anthropic({ baseURL: h.baseURL.replace(/\/v1$/, ''), apiKey: key, authToken: null, maxRetries: 0 });
}

const MODEL = 'claude-opus-4-6';

/** `count` requests to `model`, each with a 5-minute cache breakpoint. */
function requests(count: number, maxTokens = 40, model = MODEL): Anthropic.Messages.Batches.BatchCreateParams.Request[] {
  return Array.from({ length: count }, (_, i) => ({
    custom_id: `q-${i}`,
    params: {
      model,
      max_tokens: maxTokens,
      messages: [{ role: 'user', content: [{ type: 'text', text: `Question ${i}: how many foxes?`, cache_control: { type: 'ephemeral' } }] }],
    },
  }));
}

const scenario = (value: string) => ({ headers: { 'x-fake-scenario': value } });

/** What the fake billed for a batch's succeeded requests, at the batch price. */
function billedAtBatchPrice(h: Harness, batchId: string): number {
  const price = batchPriceOf(resolvePrice(MODEL, h.tollgate.config.prices));
  return fake.requests.filter((r) => r.billed?.batchId === batchId && r.status === 200).reduce((sum, r) => sum + costMicroUsd(r.billed!, price), 0);
}

interface BatchRow {
  request_id: string;
  endpoint: string;
  model: string;
  status: string;
  cost_micros: number | null;
  est_cost_micros: number;
  service_tier: string | null;
  error_code: string | null;
  cached_tokens: number;
  cache_write_5m_tokens: number | null;
}

function batchRow(h: Harness, batchId: string): BatchRow | undefined {
  return h.tollgate.database.sqlite
    .prepare(
      `SELECT request_id, endpoint, model, status, cost_micros, est_cost_micros, service_tier, error_code, cached_tokens, cache_write_5m_tokens
       FROM ledger WHERE upstream_request_id = ?`,
    )
    .get(batchId) as BatchRow | undefined;
}

async function settled(h: Harness, batchId: string): Promise<BatchRow> {
  // A generous deadline: a busy machine runs the fake's batch timers late.
  await waitFor(
    async () => {
      await h.tollgate.batches.follower.scan();
      const row = batchRow(h, batchId);
      return row !== undefined && row.status !== 'pending';
    },
    `batch ${batchId} to be settled`,
    20_000,
  );
  return batchRow(h, batchId)!;
}

/** Message Batch creates the fake has seen. */
const creates = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages/batches').length;

it('admits a batch that fits at its worst case, and settles it from its results to the micro-dollar, cache writes included', async () => {
  const h = await harness();
  const client = anthropic(h, h.issueKey('evals', { limits: [], budget: { microUsd: 1_000_000, period: 'month' } }));
  const { data: batch, response } = await client.messages.batches.create({ requests: requests(3) }, scenario('cacheRead=2,cacheWrite=3')).withResponse();
  expect(batch.processing_status).toBe('in_progress');

  // Reserved at once: every request at its largest completion, at half price.
  const pending = h.ledgerRow(response.headers.get('x-request-id')!)!;
  const price = batchPriceOf(resolvePrice(MODEL, h.tollgate.config.prices));
  expect(pending.status).toBe('pending');
  expect(pending.est_cost_micros).toBeGreaterThanOrEqual(costMicroUsd({ promptTokens: 0, cachedTokens: 0, completionTokens: 3 * 40 }, price));

  const row = await settled(h, batch.id);
  expect(row).toMatchObject({
    status: 'ok',
    endpoint: 'messages',
    model: MODEL,
    service_tier: 'batch',
    error_code: null,
    cached_tokens: 6,
    cache_write_5m_tokens: 9,
  });
  expect(row.cost_micros).toBe(billedAtBatchPrice(h, batch.id));
  expect(row.cost_micros).toBeGreaterThan(0);
  expect(row.cost_micros).toBeLessThanOrEqual(row.est_cost_micros);

  // The client reads its batch and its results through Tollgate: results_url points at Tollgate.
  const done = await client.messages.batches.retrieve(batch.id);
  expect(done.processing_status).toBe('ended');
  expect(done.request_counts.succeeded).toBe(3);
  expect(done.results_url).toBe(`${h.baseURL}/messages/batches/${batch.id}/results`);
  const results: Anthropic.Messages.Batches.MessageBatchIndividualResponse[] = [];
  for await (const result of await client.messages.batches.results(batch.id)) results.push(result);
  expect(results.map((r) => [r.custom_id, r.result.type])).toEqual([
    ['q-0', 'succeeded'],
    ['q-1', 'succeeded'],
    ['q-2', 'succeeded'],
  ]);
  const listed = await client.messages.batches.list();
  expect(listed.data.map((b) => [b.id, b.results_url])).toEqual([[batch.id, done.results_url]]);

  // Settled once: another look changes nothing; a deleted batch is gone for its key too.
  await h.tollgate.batches.follower.scan();
  expect(batchRow(h, batch.id)).toEqual(row);
  expect(await client.messages.batches.delete(batch.id)).toEqual({ id: batch.id, type: 'message_batch_deleted' });
  await expect(client.messages.batches.retrieve(batch.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  expect(batchRow(h, batch.id)).toEqual(row);
}, 60_000);

it('refuses a batch whose worst case is over what the budget has left, before the upstream sees it', async () => {
  const h = await harness();
  const client = anthropic(h, h.issueKey('tight', { limits: [], budget: { microUsd: 100, period: 'month' } }));
  const before = creates();
  const refused = await client.messages.batches.create({ requests: requests(50, 4000) }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
  const error = refused as InstanceType<typeof Anthropic.RateLimitError>;
  expect(error.status).toBe(429);
  expect(error.message).toMatch(/could cost up to \$\d+\.\d+/);
  expect((error.error as { type: string; error: { type: string } }).error.type).toBe('rate_limit_error');
  expect(creates()).toBe(before);
}, 60_000);

it('refuses a batch of two models, and a bad request naming it, before the upstream sees either', async () => {
  const h = await harness();
  const client = anthropic(h, h.issueKey('mixed'));
  const before = creates();
  const mixed = [...requests(2), ...requests(1, 40, 'claude-haiku-4-5').map((r) => ({ ...r, custom_id: 'other-model' }))];
  const refused = await client.messages.batches.create({ requests: mixed }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
  expect((refused as Error).message).toMatch(/requests\[2\]\.params\.model: Tollgate needs one model per batch/);
  expect(((refused as InstanceType<typeof Anthropic.BadRequestError>).error as { error: { type: string } }).error.type).toBe('invalid_request_error');

  const bad = requests(2);
  delete (bad[1]!.params as { max_tokens?: number }).max_tokens;
  const badItem = await client.messages.batches.create({ requests: bad }).catch((e: unknown) => e);
  expect(badItem).toBeInstanceOf(Anthropic.BadRequestError);
  expect((badItem as Error).message).toMatch(/requests\[1\]\.params/);
  expect(creates()).toBe(before);
}, 60_000);

it("answers another key's batch ids with Anthropic's 404, without asking the upstream", async () => {
  const h = await harness();
  const owner = anthropic(h, h.issueKey('owner'));
  const other = anthropic(h, h.issueKey('other'));
  const batch = await owner.messages.batches.create({ requests: requests(1) });
  // What clients asked through Tollgate (the follower's own looks carry no client request id; a batch's requests carry its create's).
  const asked = () => fake.requests.filter((r) => r.headers['x-client-request-id'] !== undefined && r.billed?.batchId === undefined).length;
  const before = asked();
  for (const call of [
    () => other.messages.batches.retrieve(batch.id),
    () => other.messages.batches.cancel(batch.id),
    () => other.messages.batches.delete(batch.id),
    () => other.get(`/v1/messages/batches/${batch.id}/results`),
  ]) {
    const refused = await call().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.NotFoundError);
    expect(((refused as InstanceType<typeof Anthropic.NotFoundError>).error as { error: { type: string } }).error.type).toBe('not_found_error');
  }
  expect(asked()).toBe(before);
  expect((await other.messages.batches.list()).data).toEqual([]);
  expect((await owner.messages.batches.list()).data.map((b) => b.id)).toEqual([batch.id]);
  await settled(h, batch.id);
}, 60_000);

it('bills an expired, partly failed batch and a cancelled one for the requests that succeeded, and one with none at $0', async () => {
  const h = await harness();
  const client = anthropic(h, h.issueKey('partial'));
  // Request 0 errors, request 1 succeeds, requests 2 and 3 expire.
  const expired = await client.messages.batches.create({ requests: requests(4) }, scenario('batchFail=1,batchExpireAfter=2'));
  const expiredRow = await settled(h, expired.id);
  expect(fake.requests.filter((r) => r.billed?.batchId === expired.id && r.status === 200)).toHaveLength(1);
  expect(expiredRow).toMatchObject({ status: 'ok', cost_micros: billedAtBatchPrice(h, expired.id) });
  expect(expiredRow.cost_micros).toBeGreaterThan(0);

  // Held after one request until the client cancels it: the rest are canceled, unbilled.
  const held = await client.messages.batches.create({ requests: requests(3) }, scenario('batchHoldAfter=1'));
  await waitFor(async () => (await client.messages.batches.retrieve(held.id)).request_counts.succeeded === 1, 'the first request to run');
  expect((await client.messages.batches.cancel(held.id)).processing_status).toBe('canceling');
  const cancelledRow = await settled(h, held.id);
  expect(cancelledRow).toMatchObject({ status: 'ok', cost_micros: billedAtBatchPrice(h, held.id) });
  const counts = (await client.messages.batches.retrieve(held.id)).request_counts;
  expect(counts).toMatchObject({ succeeded: 1, canceled: 2 });

  const none = await client.messages.batches.create({ requests: requests(2) }, scenario('batchExpireAfter=0'));
  const noneRow = await settled(h, none.id);
  expect(noneRow).toMatchObject({ status: 'upstream_error', error_code: 'batch_expired', cost_micros: 0 });
}, 60_000);

it("lists a key's batches newest first in pages, forwards and back, in Anthropic's list shape", async () => {
  const h = await harness();
  const client = anthropic(h, h.issueKey('lister'));
  const ids: string[] = [];
  for (let i = 0; i < 3; i += 1) ids.push((await client.messages.batches.create({ requests: requests(1) })).id);
  const newest = [...ids].reverse();
  const first = await client.messages.batches.list({ limit: 2 });
  expect(first.data.map((b) => b.id)).toEqual(newest.slice(0, 2));
  expect({ has_more: first.has_more, first_id: first.first_id, last_id: first.last_id }).toEqual({ has_more: true, first_id: newest[0], last_id: newest[1] });
  const rest = await client.messages.batches.list({ limit: 2, after_id: newest[1]! });
  expect(rest.data.map((b) => b.id)).toEqual([newest[2]]);
  expect(rest.has_more).toBe(false);
  const back = await client.messages.batches.list({ limit: 1, before_id: newest[2]! });
  expect(back.data.map((b) => b.id)).toEqual([newest[1]]);
  expect(back.has_more).toBe(true);
  // The SDK's own paging walks them all.
  const all: string[] = [];
  for await (const batch of client.messages.batches.list({ limit: 1 })) all.push(batch.id);
  expect(all).toEqual(newest);
  for (const id of ids) await settled(h, id);
}, 60_000);

it('settles an ended batch from its results before its client deletes it upstream', async () => {
  // The follower looks once at start and then not for an hour: only the delete settles it.
  const h = await harness(true, '1h');
  const client = anthropic(h, h.issueKey('tidy'));
  const batch = await client.messages.batches.create({ requests: requests(2) });
  await waitFor(async () => (await client.messages.batches.retrieve(batch.id)).processing_status === 'ended', 'the batch to end', 20_000);
  expect(batchRow(h, batch.id)).toBeUndefined();
  await client.messages.batches.delete(batch.id);
  const row = batchRow(h, batch.id)!;
  expect(row).toMatchObject({ status: 'ok', cost_micros: billedAtBatchPrice(h, batch.id) });
  expect(row.cost_micros).toBeLessThan(row.est_cost_micros);
}, 60_000);

it("refuses Message Batches in Anthropic's shape when no Anthropic upstream is configured, never forwarding them", async () => {
  const h = await harness(false);
  const client = anthropic(h, h.issueKey('nowhere'));
  const before = creates();
  const refused = await client.messages.batches.create({ requests: requests(1) }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(Anthropic.InternalServerError);
  expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
  expect(((refused as InstanceType<typeof Anthropic.APIError>).error as { type: string }).type).toBe('error');
  await expect(client.messages.batches.list()).rejects.toMatchObject({ status: 502 });
  expect(creates()).toBe(before);
}, 60_000);
