/**
 * A key's large bodies being taken in at once are bounded
 * (TOLLGATE_LARGE_BODIES_PER_KEY): one more waits with its bytes unread, then
 * gets a 429 — while another key's large body goes straight through.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { rawRequest, type RawResponse } from '../../support/raw-http.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_LARGE_BODIES_PER_KEY: '2', TOLLGATE_QUEUE_TIMEOUT: '1s', TOLLGATE_REQUEST_TIMEOUT: '20s' });
});
afterAll(async () => {
  await proxy.close();
});

const SIZE = 2 * 1024 * 1024;

/** A 2 MB upload that sends its first bytes and then holds for `holdMs`. */
function slowUpload(key: string, holdMs: number): Promise<RawResponse> {
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${SIZE}\r\n\r\n`;
  return rawRequest(proxy.server.port, [head, '{"model":"gpt-4o-mini","messages":[', { pauseMs: holdMs }], holdMs + 1000);
}

/** A whole 2 MB body (a long document for a model with a 1M-token window), sent at once. */
async function wholeBody(key: string): Promise<number> {
  const body = JSON.stringify({ model: 'gpt-4.1-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hello '.repeat(SIZE / 6) }] });
  const res = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

describe('large bodies per key', () => {
  it('lets a key read two large bodies at once; a third waits, then is refused with a 429 — and another key is not held up', async () => {
    const flooding = proxy.issueKey('flooding');
    const holding = [slowUpload(flooding, 3000), slowUpload(flooding, 3000)];
    // Let the two take their slots before the third arrives.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const third = await slowUpload(flooding, 3000);
    expect(third.status).toBe(429);
    expect(third.text).toContain('"code":"rate_limit_exceeded"');
    expect(third.text.toLowerCase()).toContain('retry-after: 1');
    expect(third.closedByServer).toBe(true);
    // It waited for a slot (TOLLGATE_QUEUE_TIMEOUT), not for its own upload.
    expect(Date.now() - started).toBeLessThan(5000);

    // Meanwhile another key's large body is read, parsed and answered.
    expect(await wholeBody(proxy.issueKey('bystander'))).toBe(200);
    // The two held uploads end when their clients give up (the request timeout is longer).
    expect((await Promise.all(holding)).map((upload) => upload.status)).toEqual([undefined, undefined]);
  }, 30_000);
});
