/**
 * OpenAI batch jobs through Tollgate, with the real SDK against the fake upstream's Files and Batch
 * APIs (docs/batches.md): a batch is priced line by line as its file uploads, admitted whole at its
 * worst case before the upstream sees it (or refused, saying what it would cost and what is left),
 * and settled from its output file once it ends: the ledger row equals what the fake billed at half
 * price, to the micro-dollar, and the reservation is gone. A key sees only its own files and batches.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { batchPriceOf } from '../../../src/batches/batch-estimate.js';
import { costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { parseLimit } from '../../../src/domain/policy.js';
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

async function harness(dbPath = tempDatabasePath().path): Promise<Harness> {
  const started = await startHarness(fake, dbPath, { TOLLGATE_BATCH_POLL: '20ms' });
  open.push(started);
  return started;
}

const MODEL = 'gpt-4o-mini';

/** A batch input file of `lines` chat requests. */
function inputFile(lines: number, maxTokens = 40): string {
  return Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `q-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: MODEL, messages: [{ role: 'user', content: `question ${i}` }], max_tokens: maxTokens },
    }),
  ).join('\n');
}

async function upload(client: OpenAI, text: string): Promise<string> {
  const file = await client.files.create({ file: await toFile(Buffer.from(text), 'batch.jsonl'), purpose: 'batch' });
  return file.id;
}

/** What the fake billed for a batch's lines, at the batch price. */
function billedAtBatchPrice(h: Harness, batchId: string): number {
  const price = batchPriceOf(resolvePrice(MODEL, h.tollgate.config.prices));
  return fake.requests.filter((r) => r.billed?.batchId === batchId && r.status === 200).reduce((sum, r) => sum + costMicroUsd(r.billed!, price), 0);
}

function batchRow(h: Harness, batchId: string) {
  return h.tollgate.database.sqlite
    .prepare(
      'SELECT request_id, status, cost_micros, est_cost_micros, service_tier, upstream_request_id, prompt_tokens, completion_tokens FROM ledger WHERE upstream_request_id = ?',
    )
    .get(batchId) as
    | {
        request_id: string;
        status: string;
        cost_micros: number | null;
        est_cost_micros: number;
        service_tier: string | null;
        prompt_tokens: number;
        completion_tokens: number;
      }
    | undefined;
}

async function settled(h: Harness, batchId: string): Promise<NonNullable<ReturnType<typeof batchRow>>> {
  await waitFor(async () => {
    await h.tollgate.batches.follower.scan();
    return batchRow(h, batchId)?.status !== undefined && batchRow(h, batchId)?.status !== 'pending';
  }, `batch ${batchId} to be settled`);
  return batchRow(h, batchId)!;
}

it('admits a batch that fits at its worst case, and settles it from its output file to the micro-dollar', async () => {
  const h = await harness();
  const key = h.issueKey('evals', { limits: [], budget: { microUsd: 1_000_000, period: 'month' } });
  const client = h.client(key);
  const fileId = await upload(client, inputFile(3));
  const { data: batch, response } = await client.batches
    .create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' })
    .withResponse();
  expect(batch.status).toBe('validating');

  // Reserved at once: every line at its largest completion, at half price.
  const pending = h.ledgerRow(response.headers.get('x-request-id')!)!;
  const price = batchPriceOf(resolvePrice(MODEL, h.tollgate.config.prices));
  expect(pending.status).toBe('pending');
  expect(pending.est_cost_micros).toBeGreaterThan(0);
  expect(pending.est_cost_micros).toBeLessThanOrEqual(costMicroUsd({ promptTokens: 3 * 100, cachedTokens: 0, completionTokens: 3 * 40 }, price));

  // While it runs, the budget holds the whole worst case.
  const keyId = h.tollgate.keys.lookup(key)!.id;
  const spent = () => h.tollgate.spend.spent({ level: 'key', id: keyId }, 'month', Date.now());
  expect(spent()).toBe(pending.est_cost_micros);

  const row = await settled(h, batch.id);
  expect(row.status).toBe('ok');
  // Settled: the budget holds what the batch cost, the rest of the reservation released.
  await waitFor(() => spent() === row.cost_micros, 'the budget to hold the actual cost');
  expect(row.service_tier).toBe('batch');
  expect(row.cost_micros).toBe(billedAtBatchPrice(h, batch.id));
  expect(row.cost_micros).toBeGreaterThan(0);
  expect(row.cost_micros).toBeLessThanOrEqual(row.est_cost_micros);

  // The client reads its results through Tollgate.
  const done = await client.batches.retrieve(batch.id);
  expect(done.status).toBe('completed');
  const output = await (await client.files.content(done.output_file_id!)).text();
  expect(output.trim().split('\n')).toHaveLength(3);
  // Settled once: another look changes nothing.
  await h.tollgate.batches.follower.scan();
  expect(batchRow(h, batch.id)).toEqual(row);
}, 60_000);

it('refuses a batch whose worst case is over what the budget has left, before the upstream sees it', async () => {
  const h = await harness();
  const client = h.client(h.issueKey('tight', { limits: [], budget: { microUsd: 100, period: 'month' } }));
  const fileId = await upload(client, inputFile(50, 4000));
  const creates = fake.requests.filter((r) => r.path === '/v1/batches').length;
  const refused = await client.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(OpenAI.APIError);
  const error = refused as InstanceType<typeof OpenAI.APIError>;
  expect(error.status).toBe(429);
  expect(error.message).toMatch(/could cost up to \$\d+\.\d+/);
  expect(fake.requests.filter((r) => r.path === '/v1/batches')).toHaveLength(creates);
}, 60_000);

it('refuses a file with a bad line before the upstream keeps it, naming the line', async () => {
  const h = await harness();
  const client = h.client(h.issueKey('careless'));
  const bad = `${inputFile(2)}\n{"custom_id":"q-9","method":"GET","url":"/v1/chat/completions","body":{"model":"${MODEL}"}}`;
  const refused = await upload(client, bad).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
  expect((refused as Error).message).toMatch(/Line 3: /);
  // Nothing was stored upstream: the fake's file list has no such upload.
  const listed = (await (await fetch(`${fake.url}/files`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } })).json()) as {
    data: Array<{ bytes: number }>;
  };
  expect(listed.data.every((f) => f.bytes !== Buffer.byteLength(bad))).toBe(true);
}, 60_000);

it("answers another key's file and batch ids with the API's 404, without asking the upstream", async () => {
  const h = await harness();
  const owner = h.client(h.issueKey('owner'));
  const other = h.client(h.issueKey('other'));
  const fileId = await upload(owner, inputFile(1));
  const batch = await owner.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' });
  // What clients asked through Tollgate (the follower's own looks carry no client request id).
  const asked = () => fake.requests.filter((r) => r.headers['x-client-request-id'] !== undefined && r.billed?.batchId === undefined).length;
  const before = asked();
  await expect(other.files.retrieve(fileId)).rejects.toMatchObject({ status: 404 });
  await expect(other.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
  await expect(other.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' })).rejects.toMatchObject({
    status: 404,
  });
  expect(asked()).toBe(before);
  expect((await other.batches.list()).data).toEqual([]);
  expect((await owner.batches.list()).data.map((b) => b.id)).toEqual([batch.id]);
  await settled(h, batch.id);
}, 60_000);

it('bills an expired batch for the lines it ran, and a batch left running when the process stopped after a restart, once', async () => {
  const dbPath = tempDatabasePath().path;
  const first = await harness(dbPath);
  const key = first.issueKey('backfill');
  const client = first.client(key);
  const expired = await client.batches.create(
    { input_file_id: await upload(client, inputFile(4)), endpoint: '/v1/chat/completions', completion_window: '24h' },
    { headers: { 'x-fake-scenario': 'batchExpireAfter=1' } },
  );
  const row = await settled(first, expired.id);
  expect(row.cost_micros).toBe(billedAtBatchPrice(first, expired.id));
  expect(fake.requests.filter((r) => r.billed?.batchId === expired.id && r.status === 200)).toHaveLength(1);

  const slow = await client.batches.create(
    { input_file_id: await upload(client, inputFile(2)), endpoint: '/v1/chat/completions', completion_window: '24h' },
    { headers: { 'x-fake-scenario': 'batchMs=1500' } },
  );
  await first.close();
  open.splice(open.indexOf(first), 1);
  const second = await harness(dbPath);
  const after = await settled(second, slow.id);
  expect(after.cost_micros).toBe(billedAtBatchPrice(second, slow.id));
  await waitFor(() => second.logs.lines.some((l) => l.msg === 'batch settled' && l.batchId === slow.id), 'the settlement log line');
  expect(second.logs.lines.filter((l) => l.msg === 'batch settled' && l.batchId === slow.id)).toHaveLength(1);
}, 60_000);

it('bills a cancelled batch and a partly failed one exactly what the provider bills: the lines it answered', async () => {
  const h = await harness();
  const key = h.issueKey('ops');
  const client = h.client(key);
  const cancelled = await client.batches.create(
    { input_file_id: await upload(client, inputFile(4)), endpoint: '/v1/chat/completions', completion_window: '24h' },
    { headers: { 'x-fake-scenario': 'batchHoldAfter=2' } },
  );
  await waitFor(() => fake.requests.filter((r) => r.billed?.batchId === cancelled.id).length === 2, 'two lines to run');
  expect((await client.batches.cancel(cancelled.id)).status).toMatch(/^cancell/);
  const cancelledRow = await settled(h, cancelled.id);
  expect(cancelledRow.cost_micros).toBe(billedAtBatchPrice(h, cancelled.id));
  expect(fake.requests.filter((r) => r.billed?.batchId === cancelled.id && r.status === 200)).toHaveLength(2);

  const failing = await client.batches.create(
    { input_file_id: await upload(client, inputFile(3)), endpoint: '/v1/chat/completions', completion_window: '24h' },
    { headers: { 'x-fake-scenario': 'batchFail=1' } },
  );
  const failingRow = await settled(h, failing.id);
  expect(failingRow.status).toBe('ok');
  expect(failingRow.cost_micros).toBe(billedAtBatchPrice(h, failing.id));
  expect(fake.requests.filter((r) => r.billed?.batchId === failing.id && r.status === 200)).toHaveLength(2);
  // The error file is the key's to read, and only the key's.
  const done = await client.batches.retrieve(failing.id);
  expect(done.error_file_id).toBeTruthy();
  const errors = await (await client.files.content(done.error_file_id!)).text();
  expect(errors.trim().split('\n')).toHaveLength(1);
  await expect(h.client(h.issueKey('stranger')).files.content(done.error_file_id!)).rejects.toMatchObject({ status: 404 });
}, 60_000);

it('takes files for batches only, and no file larger than its bound', async () => {
  const h = await harness();
  const client = h.client(h.issueKey('uploader'));
  const other = await client.files.create({ file: await toFile(Buffer.from(inputFile(1)), 'notes.jsonl'), purpose: 'assistants' }).catch((e: unknown) => e);
  expect(other).toMatchObject({ status: 400, message: expect.stringMatching(/'purpose' must be "batch"/) });
  const empty = await upload(client, '').catch((e: unknown) => e);
  expect(empty).toMatchObject({ status: 400, message: expect.stringMatching(/no requests/) });

  const bounded = await startHarness(fake, tempDatabasePath().path, { TOLLGATE_BATCH_POLL: '20ms', TOLLGATE_MAX_BATCH_FILE: '4096' });
  open.push(bounded);
  const large = await upload(bounded.client(bounded.issueKey('large')), inputFile(40)).catch((e: unknown) => e);
  expect(large).toMatchObject({ status: 413 });
}, 60_000);

it("counts a batch's tokens in the key's day limits when it is admitted, and not in its minute limits", async () => {
  const h = await harness();
  const client = h.client(h.issueKey('daily', { limits: [parseLimit('tokens:10/min'), parseLimit('tokens:3000/day')] }));
  // Each batch reserves about 3 × (prompt + 900) tokens: far over the minute limit, which does not apply.
  const first = await client.batches.create({
    input_file_id: await upload(client, inputFile(3, 900)),
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
  await settled(h, first.id);
  const second = await client.batches
    .create({ input_file_id: await upload(client, inputFile(3, 900)), endpoint: '/v1/chat/completions', completion_window: '24h' })
    .catch((e: unknown) => e);
  expect(second).toMatchObject({ status: 429, message: expect.stringMatching(/tokens-per-day/) });
}, 60_000);
