/**
 * The fake upstream runs Anthropic's Message Batches as Anthropic does, over HTTP: create, poll,
 * results, cancel, list, delete, and a bill of each succeeded request at half price.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { waitFor } from '../../support/wait.js';

const KEY = 'sk-ant-fake-batches-0123456789';
let fake: FakeUpstream;
let origin: string;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: KEY });
  origin = `http://127.0.0.1:${fake.port}`;
  // The fake's tokenizer loads on its first answer (seconds on a busy machine): not inside a batch's poll.
  await fetch(`${origin}/v1/messages`, { method: 'POST', headers, body: JSON.stringify(params('warm up')) });
});
afterAll(async () => {
  await fake.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** How long a poll may wait for a batch of a few tens of ms: generous, for a loaded machine. */
const POLL_BOUND_MS = 20_000;
const headers = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };

function call(method: string, path: string, body?: unknown, extra: Record<string, string> = {}, on = origin): Promise<Response> {
  return fetch(`${on}/v1/messages/batches${path}`, {
    method,
    headers: { ...headers, ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

const params = (text: string) => ({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: text }] });
const requestsOf = (ids: string[]) => ids.map((id) => ({ custom_id: id, params: params(`Question ${id}`) }));

async function create(requests: unknown[], scenario: string, on = origin): Promise<Json> {
  const created = await call('POST', '', { requests }, { 'x-fake-scenario': scenario }, on);
  expect(created.status).toBe(200);
  return (await created.json()) as Json;
}

async function until(id: string, status: string, on = origin): Promise<Json> {
  let batch: Json = {};
  await waitFor(
    async () => {
      batch = (await (await call('GET', `/${id}`, undefined, {}, on)).json()) as Json;
      return batch.processing_status === status;
    },
    `${id} ${status}`,
    POLL_BOUND_MS,
  );
  return batch;
}

async function results(id: string): Promise<Json[]> {
  const text = await (await call('GET', `/${id}/results`)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Json);
}

/** The records of a batch's requests that billed anything (they answered 200). */
const billedFor = (batchId: string) => fake.requests.filter((record) => record.billed.batchId === batchId && record.status === 200);

describe('happy path', () => {
  it('answers every request as /v1/messages answers its params and bills each succeeded one, marked with its batch and custom_id', async () => {
    const batch = await create(requestsOf(['a', 'b']), 'batchMs=20,words=4,cacheRead=3');
    expect(batch).toMatchObject({
      type: 'message_batch',
      processing_status: 'in_progress',
      request_counts: { processing: 2, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
      ended_at: null,
      results_url: null,
      cancel_initiated_at: null,
      archived_at: null,
    });
    expect(batch.id).toMatch(/^msgbatch_/);
    expect(Date.parse(batch.expires_at as string) - Date.parse(batch.created_at as string)).toBe(86_400_000);
    const ended = await until(batch.id as string, 'ended');
    expect(ended.request_counts).toEqual({ processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 });
    expect(ended.results_url).toBe(`${origin}/v1/messages/batches/${batch.id}/results`);
    expect(ended.ended_at).not.toBeNull();

    const lines = await results(batch.id as string);
    const sync = (await (
      await fetch(`${origin}/v1/messages`, {
        method: 'POST',
        headers: { ...headers, 'x-fake-scenario': 'words=4,cacheRead=3' },
        body: JSON.stringify(params('Question a')),
      })
    ).json()) as Json;
    expect(lines[0]).toMatchObject({
      custom_id: 'a',
      result: { type: 'succeeded', message: { type: 'message', content: sync.content, usage: { ...sync.usage, service_tier: 'batch' } } },
    });
    const billed = billedFor(batch.id as string);
    expect(billed.map((record) => [record.billed.customId, record.path, record.status])).toEqual([
      ['a', '/v1/messages', 200],
      ['b', '/v1/messages', 200],
    ]);
    const usage = lines[1]!.result.message.usage as Json;
    expect(billed[1]!.billed).toMatchObject({ cachedTokens: 3, completionTokens: usage.output_tokens });
  });
});

describe('how batches end otherwise', () => {
  it('errors invalid params and the first batchFail requests, billing them nothing', async () => {
    const batch = await create([...requestsOf(['a', 'b']), { custom_id: 'c', params: { model: 'claude-sonnet-4-5', messages: [] } }], 'batchMs=10,batchFail=1');
    const ended = await until(batch.id as string, 'ended');
    expect(ended.request_counts).toMatchObject({ succeeded: 1, errored: 2 });
    const lines = await results(batch.id as string);
    expect(lines.map((line) => [line.custom_id, line.result.type])).toEqual([
      ['a', 'errored'],
      ['b', 'succeeded'],
      ['c', 'errored'],
    ]);
    expect(lines[2]!.result.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } });
    expect(billedFor(batch.id as string).map((record) => record.billed.customId)).toEqual(['b']);
    const errored = fake.requests.filter((record) => record.billed.batchId === batch.id && record.status === 400);
    expect(errored.map((record) => [record.billed.customId, record.billed.promptTokens + record.billed.completionTokens])).toEqual([
      ['a', 0],
      ['c', 0],
    ]);
  });

  it('errors every request with api_error when batchEnd=failed, billing nothing', async () => {
    const batch = await create(requestsOf(['a', 'b']), 'batchMs=10,batchEnd=failed');
    const ended = await until(batch.id as string, 'ended');
    expect(ended.request_counts).toMatchObject({ succeeded: 0, errored: 2 });
    const lines = await results(batch.id as string);
    expect(lines.map((line) => line.result.error.error.type)).toEqual(['api_error', 'api_error']);
    expect(billedFor(batch.id as string)).toEqual([]);
  });

  it('expires after batchExpireAfter requests: the rest are expired and unbilled', async () => {
    const batch = await create(requestsOf(['a', 'b', 'c']), 'batchMs=10,batchExpireAfter=1');
    const ended = await until(batch.id as string, 'ended');
    expect(ended.request_counts).toEqual({ processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 2 });
    expect((await results(batch.id as string)).map((line) => line.result.type)).toEqual(['succeeded', 'expired', 'expired']);
    expect(billedFor(batch.id as string)).toHaveLength(1);
  });

  it('cancels mid-way: canceling, then ended with the rest canceled and unbilled', async () => {
    const batch = await create(requestsOf(['a', 'b', 'c', 'd']), 'batchMs=20,batchHoldAfter=1');
    await waitFor(async () => (await until(batch.id as string, 'in_progress')).request_counts.succeeded === 1, 'one request processed', POLL_BOUND_MS);
    const canceling = (await (await call('POST', `/${batch.id}/cancel`)).json()) as Json;
    expect(canceling).toMatchObject({ processing_status: 'canceling', cancel_initiated_at: expect.any(String) });
    const ended = await until(batch.id as string, 'ended');
    expect(ended.request_counts).toEqual({ processing: 0, succeeded: 1, errored: 0, canceled: 3, expired: 0 });
    expect((await results(batch.id as string)).map((line) => line.result.type)).toEqual(['succeeded', 'canceled', 'canceled', 'canceled']);
    expect(billedFor(batch.id as string).map((record) => record.billed.customId)).toEqual(['a']);
  });
});

describe('lists, deletes and errors', () => {
  it('lists batches newest first, paging with after_id and back with before_id', async () => {
    const own = await startFakeUpstream({ apiKey: KEY });
    const ownOrigin = `http://127.0.0.1:${own.port}`;
    try {
      const ids: string[] = [];
      for (const id of ['a', 'b', 'c']) ids.push((await create(requestsOf([id]), 'batchMs=5', ownOrigin)).id as string);
      const first = (await (await call('GET', '?limit=2', undefined, {}, ownOrigin)).json()) as Json;
      expect(first).toMatchObject({ has_more: true, first_id: ids[2], last_id: ids[1] });
      const second = (await (await call('GET', `?limit=2&after_id=${first.last_id}`, undefined, {}, ownOrigin)).json()) as Json;
      expect(second).toMatchObject({ has_more: false, first_id: ids[0], last_id: ids[0] });
      const back = (await (await call('GET', `?limit=1&before_id=${ids[0]}`, undefined, {}, ownOrigin)).json()) as Json;
      expect(back).toMatchObject({ has_more: true, first_id: ids[1] });
    } finally {
      await own.close();
    }
  });

  it('deletes only an ended batch, and refuses results before the end', async () => {
    const batch = await create(requestsOf(['a']), 'batchMs=10,batchHoldAfter=0');
    const early = await call('GET', `/${batch.id}/results`);
    expect(early.status).toBe(400);
    const busy = await call('DELETE', `/${batch.id}`);
    expect(busy.status).toBe(400);
    expect(await busy.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    await call('POST', `/${batch.id}/cancel`);
    await until(batch.id as string, 'ended');
    expect(await (await call('DELETE', `/${batch.id}`)).json()).toEqual({ id: batch.id, type: 'message_batch_deleted' });
    expect((await call('GET', `/${batch.id}`)).status).toBe(404);
  });

  it('refuses an empty list, a duplicate or malformed custom_id, a wrong key, and answers 404 for an unknown id', async () => {
    for (const requests of [[], [...requestsOf(['a']), ...requestsOf(['a'])], [{ custom_id: 'not ok!', params: params('x') }]]) {
      const refused = await call('POST', '', { requests });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    }
    const overloaded = await call('POST', '', { requests: requestsOf(['a']) }, { 'x-fake-scenario': 'status=529' });
    expect(overloaded.status).toBe(529);
    expect(await overloaded.json()).toMatchObject({ error: { type: 'overloaded_error' } });
    const wrongKey = await call('GET', '', undefined, { 'x-api-key': 'sk-ant-wrong' });
    expect(wrongKey.status).toBe(401);
    expect(await wrongKey.json()).toMatchObject({ error: { type: 'authentication_error' } });
    const missing = await call('GET', '/msgbatch_nope');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('refuses a body over the size limit with 413', async () => {
    const own = await startFakeUpstream({ apiKey: KEY, batchLimits: { maxFileBytes: 200 } });
    try {
      const big = await call('POST', '', { requests: requestsOf(['a', 'b', 'c', 'd']) }, {}, `http://127.0.0.1:${own.port}`);
      expect(big.status).toBe(413);
      expect(await big.json()).toMatchObject({ error: { type: 'request_too_large' } });
    } finally {
      await own.close();
    }
  });
});
