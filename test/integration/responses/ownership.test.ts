/**
 * Every id a request refers to belongs to the key that sends it: another key's
 * `previous_response_id` or `item_reference`, any `conversation` and any file id are
 * answered with the API's own 404 before the upstream is asked, and filed as an invalid
 * request. A key continues and refers to its own responses and items as before.
 */
import { NotFoundError, type OpenAI } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { scenario, startHarness, UPSTREAM_KEY, type Harness } from './harness.js';

let fake: FakeUpstream;
let h: Harness;
let owner: OpenAI;
let other: OpenAI;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  h = await startHarness(fake, tempDatabasePath().path);
  // Two keys of one tenant: a tenant does not share conversations between its keys either.
  owner = h.client(h.issueKey('owner', { limits: [] }, 'acme'));
  other = h.client(h.issueKey('other', { limits: [] }, 'acme'));
});
afterAll(async () => {
  await h.close();
  await fake.close();
});

/** Creates made upstream so far. */
function upstreamCreates(): number {
  return fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/responses').length;
}

/** The error a call fails with (a test fails if it does not). */
async function failure(call: () => Promise<unknown>): Promise<NotFoundError> {
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NotFoundError);
  return error as NotFoundError;
}

function ledgerRow(requestId: string | null | undefined): { status: string; error_code: string | null; http_status: number | null } | undefined {
  return h.tollgate.database.sqlite.prepare('SELECT status, error_code, http_status FROM ledger WHERE request_id = ?').get(requestId) as
    { status: string; error_code: string | null; http_status: number | null } | undefined;
}

async function refusedRow(error: NotFoundError): Promise<ReturnType<typeof ledgerRow>> {
  const requestId = error.headers?.get('x-request-id');
  for (let i = 0; i < 100 && ledgerRow(requestId) === undefined; i++) {
    h.tollgate.ledger.flush();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return ledgerRow(requestId);
}

describe('previous_response_id', () => {
  it("another key's response is the API's 404, the upstream never asked, filed as an invalid request", async () => {
    const mine = await owner.responses.create({ model: 'gpt-4o-mini', input: 'My secret plan.' });
    const before = upstreamCreates();
    const error = await failure(() => other.responses.create({ model: 'gpt-4o-mini', previous_response_id: mine.id, input: 'What was the plan?' }));
    expect(error.error).toEqual({
      message: `Previous response with id '${mine.id}' not found.`,
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
    expect(upstreamCreates()).toBe(before);
    expect(await refusedRow(error)).toMatchObject({ status: 'invalid_request', error_code: 'previous_response_not_found', http_status: 404 });
  });

  it('the same for a stream, an unknown id and a response created with store: false', async () => {
    const unstored = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Forget me.', store: false });
    const before = upstreamCreates();
    await failure(() => other.responses.create({ model: 'gpt-4o-mini', previous_response_id: 'resp_nobody', input: 'Hi', stream: true }));
    await failure(() => owner.responses.create({ model: 'gpt-4o-mini', previous_response_id: unstored.id, input: 'Hi' }));
    expect(upstreamCreates()).toBe(before);
  });

  it('the owner continues its own response, streamed or not, and the upstream answers from it', async () => {
    const first = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Remember the number seven.' });
    const second = await owner.responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'Which number?' });
    expect(second.status).toBe('completed');
    // The fake bills the history again as input, as the API does.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + first.usage!.output_tokens);
    const stream = await owner.responses.create({ model: 'gpt-4o-mini', previous_response_id: second.id, input: 'And again?', stream: true });
    let completed = false;
    for await (const event of stream) if (event.type === 'response.completed') completed = true;
    expect(completed).toBe(true);
  });

  it('a deleted response can no longer be continued', async () => {
    const first = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Short-lived.' });
    await owner.responses.delete(first.id);
    const before = upstreamCreates();
    await failure(() => owner.responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'Hi' }));
    expect(upstreamCreates()).toBe(before);
  });
});

describe('item_reference', () => {
  it("refers to the key's own output items (JSON and streamed) and listed input items, never another key's", async () => {
    const json = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Write a line.' });
    const streamed = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Write another.', stream: true });
    let streamedId: string | undefined;
    for await (const event of streamed) if (event.type === 'response.completed') streamedId = event.response.output[0]?.id;
    const listed = await owner.responses.inputItems.list(json.id);
    const ids = [json.output[0]!.id!, streamedId!, listed.data[0]!.id];
    expect(ids.every((id) => typeof id === 'string')).toBe(true);

    const reference = (id: string) => ({ type: 'item_reference' as const, id });
    const answer = await owner.responses.create({ model: 'gpt-4o-mini', input: [...ids.map(reference), { role: 'user', content: 'Go on.' }] });
    expect(answer.status).toBe('completed');

    const before = upstreamCreates();
    for (const id of ids) {
      const error = await failure(() => other.responses.create({ model: 'gpt-4o-mini', input: [reference(id), { role: 'user', content: 'Go on.' }] }));
      expect(error.error).toMatchObject({ message: `Item with id '${id}' not found.`, param: 'input', code: 'item_not_found' });
    }
    await failure(() => owner.responses.create({ model: 'gpt-4o-mini', input: [reference('msg_nobody')] }));
    expect(upstreamCreates()).toBe(before);
  });

  it("a deleted response's items go with it", async () => {
    const made = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Ephemeral.' });
    await owner.responses.delete(made.id);
    await failure(() => owner.responses.create({ model: 'gpt-4o-mini', input: [{ type: 'item_reference', id: made.output[0]!.id! }] }));
  });
});

describe('conversations and files Tollgate does not serve', () => {
  it('refuses every conversation with a 404 that says why, the upstream never asked', async () => {
    const before = upstreamCreates();
    for (const conversation of ['conv_123', { id: 'conv_456' }]) {
      const error = await failure(() => owner.responses.create({ model: 'gpt-4o-mini', conversation, input: 'Hi' }));
      expect(error.error).toMatchObject({ param: 'conversation', code: 'conversation_not_found' });
      expect(error.message).toContain('Tollgate does not serve the Conversations API');
    }
    expect(upstreamCreates()).toBe(before);
  });

  it('refuses a file id in a Responses, chat or Messages body with a 404 that says why, the upstream never asked', async () => {
    const calls = fake.requests.length;
    const responses = await failure(() =>
      owner.responses.create({ model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-abc' }] }] }),
    );
    expect(responses.error).toMatchObject({ param: 'file_id', code: 'file_not_found' });
    expect(responses.message).toContain('Tollgate does not serve the Files API yet');
    await failure(() =>
      owner.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-xyz' } }] }] }),
    );
    await failure(() =>
      owner.responses.create({ model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-img', detail: 'auto' }] }] }),
    );
    expect(fake.requests.length).toBe(calls);
  });
});

describe("Anthropic's Messages API", () => {
  it('refuses a document or image by file id in its own error shape, the upstream never asked', async () => {
    const key = h.issueKey('claude-user');
    const calls = fake.requests.length;
    for (const block of [
      { type: 'document', source: { type: 'file', file_id: 'file_011' } },
      { type: 'image', source: { type: 'file', file_id: 'file_012' } },
    ]) {
      const response = await fetch(`${h.baseURL}/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: [block] }] }),
      });
      expect(response.status).toBe(404);
      expect(response.headers.get('x-tollgate-error-code')).toBe('file_not_found');
      expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
    expect(fake.requests.length).toBe(calls);
  });
});

describe('lifecycle error answers', () => {
  it("mask the provider account's identifiers, as the proxy routes do", async () => {
    const mine = await owner.responses.create({ model: 'gpt-4o-mini', input: 'Mine.' });
    const error = await owner.responses.retrieve(mine.id, {}, scenario('status=429,retryAfter=0')).then(
      () => undefined,
      (e: unknown) => e as { status: number; message: string; error: unknown },
    );
    expect(error?.status).toBe(429);
    // The fake names its organization as the API does; the tenant sees it masked.
    expect(fake.requests.at(-1)!.path).toBe(`/v1/responses/${mine.id}`);
    expect(JSON.stringify(error?.error)).not.toContain('org-FakeOrg0001');
    expect(error?.message).toContain('org-***');
  });
});
