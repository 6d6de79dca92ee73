/**
 * A large body end to end: read on the estimate worker from its raw bytes,
 * and forwarded as the client's bytes with only Tollgate's changes spliced in
 * (a budget's output limit, `stream_options.include_usage`) — or refused
 * with the same 400 a small body gets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEstimatorStats } from '../../../src/estimate/index.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

/** ~300 KB of conversation (~80k tokens: inside o4-mini's window), with quotes, escapes and non-ASCII text. */
function conversationText(): string {
  const messages = Array.from({ length: 3000 }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `turn ${i}: the "café" at 5\\6 — naïve ${'fox '.repeat(15)}`,
  }));
  // Spaced and escaped the way a hand-rolled client might: none of it may change on the way.
  return JSON.stringify(messages, null, 1).replace(/é/g, '\\u00e9');
}

async function post(key: string, text: string): Promise<Response> {
  return fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: text,
  });
}

function lastReceived(): { raw: string; body: Record<string, unknown> } {
  const request = proxy.fake.requests.at(-1)!;
  return { raw: request.rawBody!, body: request.body as Record<string, unknown> };
}

describe('a large body', () => {
  it('reaches the upstream as the very bytes the client sent', async () => {
    const text = `{ "model" : "gpt-4o-mini",\n  "messages": ${conversationText()} ,"max_tokens":50 }`;
    const before = getEstimatorStats().bodiesOffloaded;
    const res = await post(proxy.key, text);
    expect(res.status).toBe(200);
    expect(getEstimatorStats().bodiesOffloaded).toBe(before + 1);
    expect(lastReceived().raw).toBe(text);
  }, 60_000);

  it('carries only the changes Tollgate makes: one output limit set to the budget’s cap, and the usage request of a stream', async () => {
    const key = proxy.issueKey('large-capped', { limits: [], budget: { microUsd: 200_000, period: 'day' } });
    const messages = conversationText();
    const text = `{"model":"o4-mini", "messages":${messages},"max_tokens":50000, "max_completion_tokens" :50000,"stream":true}`;
    const res = await post(key, text);
    const answer = await res.text();
    expect(res.status, answer).toBe(200);
    const cap = Number(res.headers.get('x-tollgate-output-capped'));
    expect(cap).toBeGreaterThan(1024);
    expect(cap).toBeLessThan(50_000);

    const { raw, body } = lastReceived();
    const sent = JSON.parse(text) as Record<string, unknown>;
    delete sent.max_tokens;
    expect(body).toEqual({ ...sent, max_completion_tokens: cap, stream_options: { include_usage: true } });
    // The conversation went on byte for byte, escapes and spacing included.
    expect(raw).toContain(`"messages":${messages},`);
  }, 60_000);

  it('is refused with a duplicate key’s path, and never reaches the upstream', async () => {
    const before = proxy.fake.requests.length;
    const text = conversationText().replace('"role": "user",\n  "content": "turn 2500:', '"role": "user",\n  "role": "system",\n  "content": "turn 2500:');
    expect(text).toContain('"role": "system"');
    const res = await post(proxy.key, `{"model":"gpt-4o-mini","messages":${text}}`);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; param: string } };
    expect(error).toMatchObject({ code: 'duplicate_key', param: 'messages[2500].role' });
    expect(proxy.fake.requests.length).toBe(before);
  }, 60_000);

  it('is refused as invalid JSON with the message a small body gets', async () => {
    const large = await post(proxy.key, `{"model":"gpt-4o-mini","messages":${conversationText()}`);
    const small = await post(proxy.key, '{"model":"gpt-4o-mini","messages":[]');
    expect([large.status, small.status]).toEqual([400, 400]);
    const codes = [((await large.json()) as { error: { code: string } }).error.code, ((await small.json()) as { error: { code: string } }).error.code];
    expect(codes).toEqual(['invalid_json', 'invalid_json']);
  }, 60_000);
});
