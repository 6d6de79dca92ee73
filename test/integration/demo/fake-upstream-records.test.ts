/**
 * The fake upstream's records can be bounded: `tollgate demo` runs it inside the proxy's process
 * and the benches run it for hundreds of thousands of requests, and every record holds its
 * request's body (types.ts, `maxRecords`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';

const KEY = 'sk-fake-records-0123456789';
let fake: FakeUpstream | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** The one message a request of {@link chat} sent. */
const contentOf = (record: RecordedRequest): string => (record.body as { messages: { content: string }[] }).messages[0]!.content;

async function chat(upstream: FakeUpstream, content: string, probe = false): Promise<void> {
  const res = await fetch(`${upstream.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...(probe ? { 'x-tollgate-probe': '1' } : {}) },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

describe('fake upstream records', () => {
  it('keeps every request by default', async () => {
    fake = await startFakeUpstream({ apiKey: KEY });
    for (const n of [1, 2, 3, 4]) await chat(fake, `question ${n}`);
    expect(fake.requests.map(contentOf)).toEqual(['question 1', 'question 2', 'question 3', 'question 4']);
  });

  it('keeps only the newest maxRecords requests and probes', async () => {
    fake = await startFakeUpstream({ apiKey: KEY, maxRecords: 2 });
    for (const n of [1, 2, 3, 4, 5]) await chat(fake, `question ${n}`);
    for (const n of [1, 2, 3]) await chat(fake, `probe ${n}`, true);
    expect(fake.requests.map(contentOf)).toEqual(['question 4', 'question 5']);
    expect(fake.probes.map(contentOf)).toEqual(['probe 2', 'probe 3']);
  });

  it('keeps none with maxRecords 0 and still answers', async () => {
    fake = await startFakeUpstream({ apiKey: KEY, maxRecords: 0 });
    for (const n of [1, 2, 3]) await chat(fake, `question ${n}`);
    expect(fake.requests).toEqual([]);
  });

  it('refuses a negative bound', async () => {
    await expect(startFakeUpstream({ apiKey: KEY, maxRecords: -1 })).rejects.toThrow(/maxRecords must be 0 or more/);
  });
});
