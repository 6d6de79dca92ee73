/**
 * The Responses lifecycle through Tollgate, driven by the openai SDK:
 * retrieve, cancel, delete and input items reach the upstream only for the
 * key that created the response; every other key — even of the same tenant —
 * and every unknown id get the API's own 404 without a call upstream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError, RateLimitError, BadRequestError } from 'openai';
import { parseLimit } from '../../../src/domain/policy.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { tempDatabasePath } from '../../support/db.js';
import { startHarness, scenario, UPSTREAM_KEY, type Harness } from './harness.js';

let fake: FakeUpstream;
let h: Harness;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  h = await startHarness(fake, tempDatabasePath().path);
  keyA = h.issueKey('alpha', { limits: [] }, 'acme');
  keyB = h.issueKey('beta', { limits: [] }, 'acme');
});
afterAll(async () => {
  await h.close();
  await fake.close();
});

/** Lifecycle calls a client made through Tollgate that reached the upstream (the poller's own polls aside). */
function upstreamCallsFor(id: string): number {
  return fake.requests.filter((r) => r.path.startsWith(`/v1/responses/${id}`) && r.headers['x-client-request-id'] !== undefined).length;
}

const input = [
  { role: 'user' as const, content: 'First question.' },
  { role: 'user' as const, content: 'Second question.' },
];

describe('a key sees only the responses it created', () => {
  it('the owner retrieves, lists the input of, and deletes its response', async () => {
    const a = h.client(keyA);
    const created = await a.responses.create({ model: 'gpt-4o-mini', input });
    const retrieved = await a.responses.retrieve(created.id);
    expect(retrieved.id).toBe(created.id);
    expect(retrieved.status).toBe('completed');
    expect(retrieved.output_text).toBe(created.output_text);

    const items = [];
    for await (const item of a.responses.inputItems.list(created.id, { order: 'asc' })) items.push(item);
    expect(items.map((item) => (item as { content: Array<{ text: string }> }).content[0]?.text)).toEqual(['First question.', 'Second question.']);
    // The query parameters the API defines reach the upstream.
    const page = await a.responses.inputItems.list(created.id, { limit: 1, order: 'asc' });
    expect(page.data).toHaveLength(1);
    expect(page.has_more).toBe(true);
    expect(fake.requests.at(-1)?.path).toBe(`/v1/responses/${created.id}/input_items`);

    await a.responses.delete(created.id);
    const calls = upstreamCallsFor(created.id);
    await expect(a.responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(upstreamCallsFor(created.id)).toBe(calls);
  });

  it("another key of the same tenant gets the API's 404 for every call, and the upstream is never asked", async () => {
    const created = await h.client(keyA).responses.create({ model: 'gpt-4o-mini', input: 'Mine.', background: true }, scenario('jobMs=600000'));
    const b = h.client(keyB);
    const calls = upstreamCallsFor(created.id);
    const attempts = [
      () => b.responses.retrieve(created.id),
      () => b.responses.cancel(created.id),
      () => b.responses.delete(created.id),
      async () => b.responses.inputItems.list(created.id),
    ];
    for (const attempt of attempts) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).message).toContain(`Response with id '${created.id}' not found.`);
      expect((error as NotFoundError).type).toBe('invalid_request_error');
    }
    expect(upstreamCallsFor(created.id)).toBe(calls);
    // The owner's job is untouched: it cancels it itself.
    const cancelled = await h.client(keyA).responses.cancel(created.id);
    expect(cancelled.status).toBe('cancelled');
  });

  it('unknown ids are 404 without asking the upstream', async () => {
    await expect(h.client(keyA).responses.retrieve('resp_does_not_exist')).rejects.toBeInstanceOf(NotFoundError);
    expect(fake.requests.filter((r) => r.path.includes('resp_does_not_exist'))).toEqual([]);
  });

  it('a response created with store: false cannot be retrieved', async () => {
    const created = await h.client(keyA).responses.create({ model: 'gpt-4o-mini', input: 'Forget me.', store: false });
    await expect(h.client(keyA).responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(upstreamCallsFor(created.id)).toBe(0);
  });

  it("the upstream's own refusals pass through (cancelling a synchronous response)", async () => {
    const created = await h.client(keyA).responses.create({ model: 'gpt-4o-mini', input: 'Quick.' });
    await expect(h.client(keyA).responses.cancel(created.id)).rejects.toBeInstanceOf(BadRequestError);
  });

  it('streaming a response by GET is a clear 400', async () => {
    const created = await h.client(keyA).responses.create({ model: 'gpt-4o-mini', input: 'Stream it later.' });
    const answer = await fetch(`${h.baseURL}/responses/${created.id}?stream=true`, { headers: { authorization: `Bearer ${keyA}` } });
    expect(answer.status).toBe(400);
    const body = (await answer.json()) as { error: { param: string; type: string } };
    expect(body.error).toMatchObject({ param: 'stream', type: 'invalid_request_error' });
  });
});

describe('lifecycle calls are requests of the key', () => {
  it("count against the key's request limit (and cost no tokens)", async () => {
    const key = h.issueKey('counted', { limits: [parseLimit('requests:3/min')] });
    const client = h.client(key);
    const created = await client.responses.create({ model: 'gpt-4o-mini', input: 'Count me.' });
    const { response } = await client.responses.retrieve(created.id).withResponse();
    expect(response.headers.get('ratelimit')).toMatch(/r=1/);
    await client.responses.retrieve(created.id);
    const refused = await client.responses.retrieve(created.id).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(RateLimitError);
    expect((refused as RateLimitError).code).toBe('rate_limit_exceeded');
    // Not billed requests: the ledger holds only the create call.
    const rows = h.tollgate.database.sqlite.prepare("SELECT count(*) AS n FROM ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.name = 'counted'").get();
    expect(rows).toEqual({ n: 1 });
  });
});
