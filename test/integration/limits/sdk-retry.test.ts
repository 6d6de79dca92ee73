/**
 * The SDKs wait what a rate-limit refusal tells them. The real server in front of the fake upstream,
 * driven by the real `openai`, `@anthropic-ai/sdk` and AI SDK (`ai` with `@ai-sdk/openai`) clients with their default retry settings: a
 * key earning one request every 2 s refuses a call with 429, and the SDK waits the refusal's
 * `retry-after-ms` and comes back once, admitted — not a burst of its own short backoff retries
 * (0.5 s, 1 s), which the bucket would refuse again. The keys start empty so that the first attempt
 * is refused however slowly the machine runs (a full bucket's second request is refused only if it
 * arrives within the 2 s). Every attempt that reached Tollgate is counted twice over: by the
 * client's fetch, and by the ledger row Tollgate files for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { parseLimit } from '../../../src/domain/policy.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

/** A key that earns one request every 2 s, starting with none. */
function slowKey(name: string): string {
  return proxy.issueKey(name, { limits: [parseLimit('requests:30/min,burst=1,start=empty')] });
}

/** A fetch that notes the status of every attempt the SDK makes. */
function countingFetch(statuses: number[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    statuses.push(response.status);
    return response;
  };
}

/** The HTTP statuses Tollgate filed for a key's requests, oldest first, once none is pending. */
async function ledgerStatuses(keyName: string, expected: number): Promise<number[]> {
  const read = (): Array<{ status: string; http_status: number | null }> => {
    const database = openDatabase(proxy.dbPath);
    try {
      return database.sqlite
        .prepare('SELECT l.status, l.http_status FROM ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.name = ? ORDER BY l.created_at, l.rowid')
        .all(keyName) as Array<{ status: string; http_status: number | null }>;
    } finally {
      database.close();
    }
  };
  await waitFor(() => {
    const rows = read();
    return rows.length >= expected && rows.every((row) => row.status !== 'pending');
  }, `${expected} settled ledger rows of ${keyName}`);
  return read().map((row) => row.http_status ?? 0);
}

const chat = [{ role: 'user' as const, content: 'Tell me about foxes.' }];
const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Tell me about foxes.' }];

describe('a refused request is retried once, after the wait', () => {
  it('openai: chat completion', async () => {
    const statuses: number[] = [];
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: slowKey('openai-json'), fetch: countingFetch(statuses) });
    const upstreamBefore = proxy.fake.requests.length;
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: chat });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    expect(statuses).toEqual([429, 200]);
    expect(await ledgerStatuses('openai-json', 2)).toEqual([429, 200]);
    expect(proxy.fake.requests.length - upstreamBefore).toBe(1);
  });

  it('openai: streamed chat completion', async () => {
    const statuses: number[] = [];
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: slowKey('openai-stream'), fetch: countingFetch(statuses) });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: chat, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).not.toBe('');
    expect(statuses).toEqual([429, 200]);
    expect(await ledgerStatuses('openai-stream', 2)).toEqual([429, 200]);
  });

  it('@anthropic-ai/sdk: message', async () => {
    const statuses: number[] = [];
    const client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: slowKey('anthropic-json'), fetch: countingFetch(statuses) });
    const upstreamBefore = proxy.fake.requests.length;
    const answer = await client.messages.create({ model: 'claude-opus-4-6', max_tokens: 64, messages });
    expect(answer.content.length).toBeGreaterThan(0);
    expect(statuses).toEqual([429, 200]);
    expect(await ledgerStatuses('anthropic-json', 2)).toEqual([429, 200]);
    expect(proxy.fake.requests.length - upstreamBefore).toBe(1);
  });

  it('@anthropic-ai/sdk: streamed message', async () => {
    const statuses: number[] = [];
    const client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: slowKey('anthropic-stream'), fetch: countingFetch(statuses) });
    const final = await client.messages.stream({ model: 'claude-opus-4-6', max_tokens: 64, messages }).finalMessage();
    expect(final.content.length).toBeGreaterThan(0);
    expect(statuses).toEqual([429, 200]);
    expect(await ledgerStatuses('anthropic-stream', 2)).toEqual([429, 200]);
  });

  it('AI SDK: generateText', async () => {
    const statuses: number[] = [];
    const provider = createOpenAI({ baseURL: proxy.baseURL, apiKey: slowKey('ai-sdk-json'), fetch: countingFetch(statuses) });
    const upstreamBefore = proxy.fake.requests.length;
    const answer = await generateText({ model: provider.chat('gpt-4o-mini'), messages: chat });
    expect(answer.text).not.toBe('');
    expect(statuses).toEqual([429, 200]);
    expect(await ledgerStatuses('ai-sdk-json', 2)).toEqual([429, 200]);
    expect(proxy.fake.requests.length - upstreamBefore).toBe(1);
  });

  it('AI SDK: streamText', async () => {
    const statuses: number[] = [];
    const provider = createOpenAI({ baseURL: proxy.baseURL, apiKey: slowKey('ai-sdk-stream'), fetch: countingFetch(statuses) });
    const result = streamText({ model: provider.chat('gpt-4o-mini'), messages: chat });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text).not.toBe('');
    expect(statuses).toEqual([429, 200]);
    expect(await ledgerStatuses('ai-sdk-stream', 2)).toEqual([429, 200]);
  });

  it('the refusal the SDKs waited on says the wait in every form, under a minute', async () => {
    const key = slowKey('raw');
    const send = () =>
      fetch(`${proxy.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: chat }),
      });
    const refused = await send();
    expect(refused.status).toBe(429);
    const ms = Number(refused.headers.get('retry-after-ms'));
    const seconds = Number(refused.headers.get('retry-after'));
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(3000); // at most 2 s, stretched by at most half
    expect(seconds * 1000).toBeGreaterThanOrEqual(ms);
    expect(refused.headers.get('x-tollgate-retry-after')).toBe('2');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe('Rate limit reached for limit "requests-per-min". Try again in 2 s.');
  });
});
