/** The fake upstream's Anthropic dialect behaves like Anthropic's API where Tollgate relies on it: auth, errors, events, max_tokens. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';

let fake: FakeUpstream;
let origin: string;
const KEY = 'sk-ant-fake-0123456789';

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: KEY });
  origin = `http://127.0.0.1:${fake.port}`;
});
afterAll(async () => {
  await fake.close();
});

const body = { model: 'claude-opus-4-6', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] };
const post = (headers: Record<string, string>, payload: unknown = body, path = '/v1/messages') =>
  fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload) });

it('refuses a wrong x-api-key with 401 authentication_error, and a missing anthropic-version with 400', async () => {
  const wrong = await post({ 'x-api-key': 'sk-ant-wrong', 'anthropic-version': '2023-06-01' });
  expect(wrong.status).toBe(401);
  expect(await wrong.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  const bearer = await post({ authorization: `Bearer ${KEY}`, 'anthropic-version': '2023-06-01' });
  expect(bearer.status).toBe(401);
  const noVersion = await post({ 'x-api-key': KEY });
  expect(noVersion.status).toBe(400);
  expect(await noVersion.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('anthropic-version') } });
});

it('answers 429 rate_limit_error with retry-after and 529 overloaded_error when told to', async () => {
  const headers = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' };
  const limited = await post({ ...headers, 'x-fake-scenario': 'status=429' });
  expect(limited.status).toBe(429);
  expect(limited.headers.get('retry-after')).toBe('1');
  expect(await limited.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  const overloaded = await post({ ...headers, 'x-fake-scenario': 'status=529' });
  expect(overloaded.status).toBe(529);
  expect(await overloaded.json()).toMatchObject({ error: { type: 'overloaded_error' } });
});

it("streams Anthropic's event sequence and stops at max_tokens", async () => {
  const response = await post({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }, { ...body, stream: true });
  const text = await response.text();
  const events = [...text.matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
  expect(events).toEqual([
    'message_start',
    'content_block_start',
    'ping',
    ...Array(5).fill('content_block_delta'),
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  expect(text).toContain('"stop_reason":"max_tokens"');
  expect(text).toContain('"output_tokens":5');
  expect(fake.requests.at(-1)!.billed.completionTokens).toBe(5);
  const counted = await post({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }, body, '/v1/messages/count_tokens');
  expect(await counted.json()).toEqual({ input_tokens: expect.any(Number) });
});
