/**
 * A stream through Tollgate is the stream the client would have got directly. Without
 * `stream_options.include_usage`, Tollgate asks the upstream for usage (to bill it), and the
 * upstream then adds `"usage":null` to every chunk and a final usage chunk; the relay takes both
 * out again. The same request straight to the fake upstream and through Tollgate gives the same
 * data lines byte for byte (the fake's random id and clock normalised), and the only line
 * Tollgate adds is its receipt comment at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

/** The stream with what the fake randomises per answer (its id, its clock) made fixed. */
function normalised(text: string): string {
  return text.replace(/"id":"(chatcmpl|cmpl)-[0-9a-f]+"/g, '"id":"$1-X"').replace(/"created":\d+/g, '"created":0');
}

/** The receipt comment a stream through Tollgate ends with (receipts.test.ts checks what it says). */
const RECEIPT = /: tollgate cost_usd=\d+\.\d{6} reserved_usd=\d+\.\d{6} request_id=req_\S+\n\n$/;

async function streamOf(url: string, key: string, body: unknown): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return response.text();
}

describe('a stream without include_usage', () => {
  for (const [name, path, body] of [
    ['chat', '/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Tell me about foxes' }], stream: true }],
    ['completions', '/completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'Tell me about foxes', stream: true }],
  ] as const) {
    it(`${name}: equals the upstream's own bytes, plus the receipt comment`, async () => {
      const direct = await streamOf(`${proxy.fake.url}${path}`, UPSTREAM_KEY, body);
      const through = await streamOf(`${proxy.baseURL}${path}`, proxy.key, body);
      expect(direct).not.toContain('"usage"');
      // Tollgate asked for usage upstream: the fake received include_usage, the client did not see it.
      const upstream = proxy.fake.requests.at(-1)!.body as { stream_options?: { include_usage?: boolean } };
      expect(upstream.stream_options?.include_usage).toBe(true);
      const receipt = RECEIPT.exec(through);
      expect(receipt, through.slice(-200)).not.toBeNull();
      expect(normalised(through.slice(0, receipt!.index))).toBe(normalised(direct));
    });
  }

  it('with include_usage asked by the client: every chunk has "usage":null and a final usage chunk, as the upstream sent', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true, stream_options: { include_usage: true } };
    const direct = normalised(await streamOf(`${proxy.fake.url}/chat/completions`, UPSTREAM_KEY, body));
    const through = await streamOf(`${proxy.baseURL}/chat/completions`, proxy.key, body);
    const chunks = direct.split('\n').filter((line) => line.startsWith('data: {'));
    expect(chunks.slice(0, -1).every((line) => line.endsWith(',"usage":null}'))).toBe(true);
    expect(chunks.at(-1)).toContain('"choices":[],"usage":{');
    const receipt = RECEIPT.exec(through);
    expect(normalised(through.slice(0, receipt!.index))).toBe(direct);
  });
});
