/**
 * The fake upstream runs OpenAI's Files and Batch APIs as OpenAI does, over HTTP: upload, create,
 * the lifecycle, output and error files, and a bill of each processed line at half price.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { waitFor } from '../../support/wait.js';

const KEY = 'sk-fake-batches-0123456789';
let fake: FakeUpstream;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: KEY, batchLimits: { maxFileBytes: 10_000 } });
  // The fake's tokenizer loads on its first answer (seconds on a busy machine): not inside a batch's poll.
  await call(fake, 'POST', '/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'warm up' }] });
});
afterAll(async () => {
  await fake.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const auth = { authorization: `Bearer ${KEY}` };
/** How long a poll may wait for a batch of a few tens of ms: generous, for a loaded machine. */
const POLL_BOUND_MS = 20_000;

async function upload(on: FakeUpstream, text: string, filename = 'input.jsonl', purpose = 'batch'): Promise<Response> {
  const form = new FormData();
  form.append('purpose', purpose);
  form.append('file', new Blob([text]), filename);
  return fetch(`${on.url}/files`, { method: 'POST', headers: auth, body: form });
}

async function call(on: FakeUpstream, method: string, path: string, body?: unknown, scenario?: string): Promise<Response> {
  const headers: Record<string, string> = { ...auth, 'content-type': 'application/json' };
  if (scenario !== undefined) headers['x-fake-scenario'] = scenario;
  return fetch(`${on.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

const chatLine = (customId: string, text: string, url = '/v1/chat/completions', method = 'POST') =>
  JSON.stringify({ custom_id: customId, method, url, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }] } });

/** Uploads the lines, creates a batch with the scenario, and returns it as created. */
async function startBatch(on: FakeUpstream, lines: string[], scenario: string, endpoint = '/v1/chat/completions'): Promise<Json> {
  const file = (await (await upload(on, `${lines.join('\n')}\n`)).json()) as Json;
  const created = await call(on, 'POST', '/batches', { input_file_id: file.id, endpoint, completion_window: '24h', metadata: { job: 'test' } }, scenario);
  expect(created.status).toBe(200);
  return (await created.json()) as Json;
}

async function batchUntil(on: FakeUpstream, id: string, statuses: string[]): Promise<Json> {
  let batch: Json = {};
  await waitFor(
    async () => {
      batch = (await (await call(on, 'GET', `/batches/${id}`)).json()) as Json;
      return statuses.includes(batch.status as string);
    },
    `batch ${id} to reach ${statuses.join('|')}`,
    POLL_BOUND_MS,
  );
  return batch;
}

async function fileLines(on: FakeUpstream, id: string | null): Promise<Json[]> {
  if (id === null) return [];
  const text = await (await call(on, 'GET', `/files/${id}/content`)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Json);
}

/** The records of a batch's processed lines; those that billed anything answered 200. */
const linesBilled = (on: FakeUpstream, batchId: string) => on.requests.filter((record) => record.billed.batchId === batchId && record.status === 200);
const linesProcessed = (on: FakeUpstream, batchId: string) => on.requests.filter((record) => record.billed.batchId === batchId);

describe('happy path', () => {
  it('answers every line as the endpoint answers that body and bills each one, marked with its batch and custom_id', async () => {
    const texts = ['Hello there', 'A somewhat longer question about foxes', 'Why?'];
    const batch = await startBatch(
      fake,
      texts.map((text, i) => chatLine(`line-${i}`, text)),
      'batchMs=40,words=5,cached=2',
    );
    expect(batch).toMatchObject({
      object: 'batch',
      status: 'validating',
      endpoint: '/v1/chat/completions',
      model: 'gpt-4o-mini',
      completion_window: '24h',
      metadata: { job: 'test' },
      output_file_id: null,
    });
    expect(batch.id).toMatch(/^batch_/);
    const done = await batchUntil(fake, batch.id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    for (const field of ['in_progress_at', 'finalizing_at', 'completed_at', 'output_file_id']) expect(done[field]).not.toBeNull();
    expect(done.error_file_id).toBeNull();

    const output = await fileLines(fake, done.output_file_id);
    expect(output.map((line) => line.custom_id)).toEqual(['line-0', 'line-1', 'line-2']);
    for (const [i, line] of output.entries()) {
      const sync = (await (await call(fake, 'POST', '/chat/completions', JSON.parse(chatLine('x', texts[i]!)).body, 'words=5,cached=2')).json()) as Json;
      expect(line).toMatchObject({ id: expect.stringMatching(/^batch_req_/), error: null, response: { status_code: 200, request_id: expect.any(String) } });
      expect(line.response.body).toMatchObject({ object: 'chat.completion', model: 'gpt-4o-mini', usage: sync.usage });
      expect(line.response.body.choices[0].message.content).toBe(sync.choices[0].message.content);
    }
    const billed = linesBilled(fake, batch.id);
    expect(billed.map((record) => [record.billed.customId, record.path, record.status])).toEqual([
      ['line-0', '/v1/chat/completions', 200],
      ['line-1', '/v1/chat/completions', 200],
      ['line-2', '/v1/chat/completions', 200],
    ]);
    for (const [i, record] of billed.entries()) {
      const usage = output[i]!.response.body.usage as Json;
      expect(record.billed).toMatchObject({ promptTokens: usage.prompt_tokens, cachedTokens: 2, completionTokens: usage.completion_tokens });
    }
    const sum = (pick: (usage: Json) => number) => output.reduce((total, line) => total + pick(line.response.body.usage as Json), 0);
    expect(done.usage).toMatchObject({ input_tokens: sum((u) => u.prompt_tokens), output_tokens: sum((u) => u.completion_tokens) });
  });

  it('serves embeddings and Responses batches too', async () => {
    const embed = (id: string) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: 'foxes' } });
    const embeddings = await startBatch(fake, [embed('e1'), embed('e2')], 'batchMs=10', '/v1/embeddings');
    const responses = await startBatch(
      fake,
      [JSON.stringify({ custom_id: 'r1', method: 'POST', url: '/v1/responses', body: { model: 'gpt-4o-mini', input: 'Hi', max_output_tokens: 3 } })],
      'batchMs=10',
      '/v1/responses',
    );
    const [embedded] = await fileLines(fake, (await batchUntil(fake, embeddings.id, ['completed'])).output_file_id);
    expect(embedded!.response.body).toMatchObject({ object: 'list', usage: { prompt_tokens: expect.any(Number) } });
    const [responded] = await fileLines(fake, (await batchUntil(fake, responses.id, ['completed'])).output_file_id);
    expect(responded!.response.body).toMatchObject({ object: 'response', status: 'completed', usage: { output_tokens: 3 } });
  });

  it('prices batch lines at half the synchronous rate in the Costs report and tells them apart in the Usage report', async () => {
    const billing = { adminKey: 'sk-admin-fake', pageSize: 7 };
    const batchFake = await startFakeUpstream({ apiKey: KEY, billing });
    const syncFake = await startFakeUpstream({ apiKey: KEY, billing });
    try {
      const batch = await startBatch(batchFake, [chatLine('a', 'Price me'), chatLine('b', 'Price me')], 'batchMs=10');
      await batchUntil(batchFake, batch.id, ['completed']);
      await call(syncFake, 'POST', '/chat/completions', JSON.parse(chatLine('x', 'Price me')).body);
      const day = Math.floor(Date.now() / 86_400_000) * 86_400;
      const report = async (on: FakeUpstream, path: string) =>
        (await (
          await fetch(`${on.url}/organization/${path}start_time=${day}&end_time=${day + 86_400}`, { headers: { authorization: `Bearer ${billing.adminKey}` } })
        ).json()) as Json;
      const cost = async (on: FakeUpstream) => (await report(on, 'costs?')).data[0].results.reduce((total: number, r: Json) => total + r.amount.value, 0);
      // Two lines at half price cost what one synchronous request costs (compared in pico-dollars: the report sums floats).
      expect(Math.round((await cost(batchFake)) * 1e12)).toBe(Math.round((await cost(syncFake)) * 1e12));
      expect(await cost(batchFake)).toBeGreaterThan(0);
      const usage = await report(batchFake, 'usage/completions?group_by=batch&');
      expect(usage.data[0].results).toEqual([expect.objectContaining({ batch: true, num_model_requests: 2 })]);
    } finally {
      await batchFake.close();
      await syncFake.close();
    }
  });
});

describe('how batches end otherwise', () => {
  it('fails a batch whose input has a bad JSON line, a wrong method or url, another endpoint or a duplicate custom_id', async () => {
    const batch = await startBatch(
      fake,
      [
        chatLine('ok', 'fine'),
        '{not json',
        chatLine('get', 'x', '/v1/chat/completions', 'GET'),
        chatLine('nowhere', 'x', '/v1/nowhere'),
        chatLine('mixed', 'x', '/v1/completions'),
        chatLine('ok', 'again'),
      ],
      'batchMs=10',
    );
    const failed = await batchUntil(fake, batch.id, ['failed']);
    expect(failed.failed_at).not.toBeNull();
    expect(failed.errors.object).toBe('list');
    expect(failed.errors.data.map((e: Json) => [e.code, e.line])).toEqual([
      ['invalid_json_line', 2],
      ['invalid_method', 3],
      ['invalid_url', 4],
      ['mismatched_endpoint', 5],
      ['duplicate_custom_id', 6],
    ]);
    expect(failed.output_file_id).toBeNull();
    expect(linesBilled(fake, batch.id)).toEqual([]);
  });

  it('puts the first batchFail lines in the error file with their 400 and bills them nothing', async () => {
    const batch = await startBatch(fake, [chatLine('a', 'x'), chatLine('b', 'y'), chatLine('c', 'z')], 'batchMs=10,batchFail=2');
    const done = await batchUntil(fake, batch.id, ['completed']);
    expect(done.request_counts).toEqual({ total: 3, completed: 1, failed: 2 });
    const errors = await fileLines(fake, done.error_file_id);
    expect(errors.map((line) => [line.custom_id, line.response.status_code, line.error])).toEqual([
      ['a', 400, null],
      ['b', 400, null],
    ]);
    expect(errors[0]!.response.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect((await fileLines(fake, done.output_file_id)).map((line) => line.custom_id)).toEqual(['c']);
    expect(linesBilled(fake, batch.id).map((record) => record.billed.customId)).toEqual(['c']);
    const processed = linesProcessed(fake, batch.id).map((record) => [
      record.billed.customId,
      record.status,
      record.billed.promptTokens + record.billed.completionTokens,
    ]);
    expect(processed).toEqual([
      ['a', 400, 0],
      ['b', 400, 0],
      ['c', 200, expect.any(Number)],
    ]);
  });

  it('expires after batchExpireAfter lines: their results kept, the rest batch_expired and unbilled', async () => {
    const batch = await startBatch(
      fake,
      ['a', 'b', 'c', 'd'].map((id) => chatLine(id, id)),
      'batchMs=20,batchExpireAfter=1',
    );
    const expired = await batchUntil(fake, batch.id, ['expired']);
    expect(expired.expired_at).not.toBeNull();
    expect(expired.request_counts).toEqual({ total: 4, completed: 1, failed: 3 });
    expect((await fileLines(fake, expired.output_file_id)).map((line) => line.custom_id)).toEqual(['a']);
    const errors = await fileLines(fake, expired.error_file_id);
    expect(errors.map((line) => [line.custom_id, line.response, line.error.code])).toEqual([
      ['b', null, 'batch_expired'],
      ['c', null, 'batch_expired'],
      ['d', null, 'batch_expired'],
    ]);
    expect(linesBilled(fake, batch.id)).toHaveLength(1);
  });

  it('cancels itself after batchStopAfter lines when batchEnd=cancelled', async () => {
    const batch = await startBatch(
      fake,
      ['a', 'b', 'c'].map((id) => chatLine(id, id)),
      'batchMs=10,batchEnd=cancelled,batchStopAfter=1',
    );
    const cancelled = await batchUntil(fake, batch.id, ['cancelled']);
    expect(cancelled).toMatchObject({ request_counts: { total: 3, completed: 1, failed: 0 }, cancelling_at: expect.any(Number) });
    expect((await fileLines(fake, cancelled.output_file_id)).map((line) => line.custom_id)).toEqual(['a']);
  });

  it('fails with token_limit_exceeded when told to, billing nothing', async () => {
    const batch = await startBatch(fake, [chatLine('a', 'x')], 'batchMs=10,batchEnd=failed');
    const failed = await batchUntil(fake, batch.id, ['failed']);
    expect(failed.errors.data).toEqual([expect.objectContaining({ code: 'token_limit_exceeded', line: null })]);
    expect(linesBilled(fake, batch.id)).toEqual([]);
  });

  it('cancels mid-way: cancelling, then cancelled with partial results, only the processed lines billed', async () => {
    const batch = await startBatch(
      fake,
      ['a', 'b', 'c', 'd', 'e'].map((id) => chatLine(id, id)),
      'batchMs=20,batchHoldAfter=2',
    );
    await waitFor(async () => (await batchUntil(fake, batch.id, ['in_progress'])).request_counts.completed === 2, 'two lines processed', POLL_BOUND_MS);
    const cancelling = (await (await call(fake, 'POST', `/batches/${batch.id}/cancel`)).json()) as Json;
    expect(cancelling).toMatchObject({ status: 'cancelling', cancelling_at: expect.any(Number) });
    const cancelled = await batchUntil(fake, batch.id, ['cancelled']);
    expect(cancelled.request_counts).toEqual({ total: 5, completed: 2, failed: 0 });
    expect(cancelled.cancelled_at).not.toBeNull();
    expect((await fileLines(fake, cancelled.output_file_id)).map((line) => line.custom_id)).toEqual(['a', 'b']);
    expect(cancelled.error_file_id).toBeNull();
    expect(linesProcessed(fake, batch.id).map((record) => record.billed.customId)).toEqual(['a', 'b']);
    const again = await call(fake, 'POST', `/batches/${batch.id}/cancel`);
    expect(again.status).toBe(400);
  });
});

describe('files, lists and errors', () => {
  it('lists batches newest first in pages of limit, following after', async () => {
    const own = await startFakeUpstream({ apiKey: KEY });
    try {
      const ids: string[] = [];
      for (const id of ['a', 'b', 'c']) ids.push((await startBatch(own, [chatLine(id, id)], 'batchMs=5')).id as string);
      const first = (await (await call(own, 'GET', '/batches?limit=2')).json()) as Json;
      expect(first).toMatchObject({ object: 'list', has_more: true, first_id: ids[2], last_id: ids[1] });
      const second = (await (await call(own, 'GET', `/batches?limit=2&after=${first.last_id}`)).json()) as Json;
      expect(second).toMatchObject({ has_more: false, first_id: ids[0], last_id: ids[0] });
      expect(second.data).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it('uploads, describes, serves and deletes a file, then answers 404 for it', async () => {
    const text = `${chatLine('a', 'x')}\n`;
    const file = (await (await upload(fake, text, 'mine.jsonl')).json()) as Json;
    expect(file).toMatchObject({ object: 'file', bytes: Buffer.byteLength(text), filename: 'mine.jsonl', purpose: 'batch', created_at: expect.any(Number) });
    expect(file.id).toMatch(/^file-/);
    expect(await (await call(fake, 'GET', `/files/${file.id}`)).json()).toMatchObject({ id: file.id, object: 'file' });
    expect(await (await call(fake, 'GET', `/files/${file.id}/content`)).text()).toBe(text);
    const listed = (await (await call(fake, 'GET', '/files?purpose=batch')).json()) as Json;
    expect(listed).toMatchObject({ object: 'list', first_id: file.id });
    expect(listed.data.every((f: Json) => f.purpose === 'batch')).toBe(true);
    expect(await (await call(fake, 'DELETE', `/files/${file.id}`)).json()).toEqual({ id: file.id, object: 'file', deleted: true });
    const gone = await call(fake, 'GET', `/files/${file.id}`);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining(file.id) } });
  });

  it('refuses a file over the size limit, a wrong purpose, a batch of an unknown file, and a wrong key', async () => {
    const big = await upload(fake, 'x'.repeat(10_001));
    expect(big.status).toBe(400);
    expect(await big.json()).toMatchObject({ error: { code: 'file_too_large' } });
    expect((await upload(fake, 'x', 'a.jsonl', 'nonsense')).status).toBe(400);
    const unknown = await call(fake, 'POST', '/batches', { input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' });
    expect(unknown.status).toBe(404);
    const window = await call(fake, 'POST', '/batches', { input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '1h' });
    expect(window.status).toBe(400);
    const limited = await call(
      fake,
      'POST',
      '/batches',
      { input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' },
      'status=429',
    );
    expect(limited.status).toBe(429);
    const missing = await call(fake, 'GET', '/batches/batch_nope');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('batch_nope') } });
    const wrongKey = await fetch(`${fake.url}/batches`, { headers: { authorization: 'Bearer sk-wrong' } });
    expect(wrongKey.status).toBe(401);
    expect(await wrongKey.json()).toMatchObject({ error: { code: 'invalid_api_key' } });
  });

  it('keeps at most maxFiles files, the oldest going first', async () => {
    const own = await startFakeUpstream({ batchLimits: { maxFiles: 2 } });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) ids.push(((await (await upload(own, `${chatLine(`${i}`, 'x')}\n`)).json()) as Json).id as string);
      expect((await call(own, 'GET', `/files/${ids[0]}`)).status).toBe(404);
      expect((await call(own, 'GET', `/files/${ids[2]}`)).status).toBe(200);
    } finally {
      await own.close();
    }
  });
});
