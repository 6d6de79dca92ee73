/**
 * The fake upstream bills a client that leaves as OpenAI's and Anthropic's APIs do, which is
 * what Tollgate's ledger is held against (README, "The ledger"): a JSON answer is finished and
 * billed in full; a stream stops and bills the prompt, the hidden reasoning generated so far
 * and the tokens sent.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { waitFor } from '../../support/wait.js';

const KEY = 'sk-fake-billing-0123456789';
let fake: FakeUpstream;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: KEY });
});
afterAll(async () => {
  await fake.close();
});

interface Call {
  readonly req: ClientRequest;
  /** Resolves with the response once its headers arrived. */
  readonly response: Promise<IncomingMessage>;
}

function call(path: string, body: Record<string, unknown>, scenario: string): Call {
  const anthropic = path === '/v1/messages';
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-fake-scenario': scenario,
    ...(anthropic ? { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${KEY}` }),
  };
  const req = request({ host: '127.0.0.1', port: fake.port, path, method: 'POST', headers });
  req.on('error', () => undefined);
  const response = new Promise<IncomingMessage>((resolve) => req.on('response', resolve));
  req.end(JSON.stringify(body));
  return { req, response };
}

/** Reads the stream until `until` holds for what arrived so far, then hangs up (`afterMs` later). */
async function hangUpWhen(call: Call, until: (text: string) => boolean, afterMs = 0): Promise<string> {
  const res = await call.response;
  let text = '';
  await new Promise<void>((resolve) => {
    res.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (until(text)) resolve();
    });
    res.on('end', () => resolve());
  });
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  call.req.destroy();
  return text;
}

const o4 = (stream: boolean) => ({ model: 'o4-mini', stream, messages: [{ role: 'user', content: 'Think hard.' }] });
const claude = (stream: boolean) => ({ model: 'claude-opus-4-6', max_tokens: 5000, stream, messages: [{ role: 'user', content: 'Think hard.' }] });

describe("OpenAI's API", () => {
  it('finishes and bills a JSON answer in full when its client leaves before it', async () => {
    const before = fake.requests.length;
    const pending = call('/v1/chat/completions', o4(false), 'reasoning=500,delay=300');
    await waitFor(() => fake.requests.length > before, 'the fake to take the request');
    pending.req.destroy();
    await fake.settled();
    const record = fake.requests[before]!;
    expect(record.closedEarly).toBe(true);
    expect(record.finished).toBe(true);
    expect(record.billed).toMatchObject({ reasoningTokens: 500, completionTokens: 512 });
  });

  it('bills the reasoning generated before a stream’s client left, and nothing visible', async () => {
    const before = fake.requests.length;
    const stream = call('/v1/chat/completions', o4(true), 'reasoning=1000,reasoningMs=1500');
    // The first chunk (the assistant's role) comes before the reasoning; leave a moment into it.
    await hangUpWhen(stream, (text) => text.includes('"role":"assistant"'), 400);
    await fake.settled();
    const record = fake.requests[before]!;
    expect(record.finished).toBe(false);
    expect(record.chunksSent).toBe(0);
    expect(record.billed.reasoningTokens).toBeGreaterThan(0);
    expect(record.billed.reasoningTokens).toBeLessThan(1000);
    expect(record.billed.completionTokens).toBe(record.billed.reasoningTokens);
  });

  it('bills every reasoning token and the tokens sent when a stream’s client leaves after the first one', async () => {
    const before = fake.requests.length;
    const stream = call('/v1/responses', { model: 'o4-mini', input: 'Think hard.', stream: true }, 'reasoning=300,delay=40,words=60');
    await hangUpWhen(stream, (text) => text.includes('response.output_text.delta'));
    await fake.settled();
    const record = fake.requests[before]!;
    expect(record.finished).toBe(false);
    expect(record.chunksSent).toBeGreaterThanOrEqual(1);
    expect(record.chunksSent).toBeLessThan(60);
    // Each fake word is one token.
    expect(record.billed).toMatchObject({ reasoningTokens: 300, completionTokens: 300 + record.chunksSent });
  });

  it('bills a stream read to its end exactly what its usage says', async () => {
    const before = fake.requests.length;
    const res = await call('/v1/chat/completions', { ...o4(true), stream_options: { include_usage: true } }, 'reasoning=200,reasoningMs=50').response;
    let text = '';
    for await (const chunk of res) text += (chunk as Buffer).toString();
    const usage = JSON.parse(
      text
        .split('\n\n')
        .find((event) => event.includes('"usage":{'))!
        .slice('data: '.length),
    ).usage;
    expect(fake.requests[before]!.billed).toMatchObject({ reasoningTokens: 200, completionTokens: usage.completion_tokens });
    expect(usage.completion_tokens_details.reasoning_tokens).toBe(200);
  });
});

describe("Anthropic's Messages API", () => {
  it('finishes and bills a JSON message in full, thinking included, when its client leaves before it', async () => {
    const before = fake.requests.length;
    const pending = call('/v1/messages', claude(false), 'reasoning=800,thinking=5,delay=300');
    await waitFor(() => fake.requests.length > before, 'the fake to take the request');
    pending.req.destroy();
    await fake.settled();
    const record = fake.requests[before]!;
    expect(record.finished).toBe(true);
    // Hidden thinking, five words of thinking shown, twelve of answer: one token each.
    expect(record.billed.completionTokens).toBe(800 + 5 + 12);
  });

  it('bills the thinking generated before a stream’s client left, shown or not', async () => {
    const before = fake.requests.length;
    const stream = call('/v1/messages', claude(true), 'reasoning=1000,reasoningMs=1500,thinking=5');
    await hangUpWhen(stream, (text) => text.includes('content_block_start'), 400);
    await fake.settled();
    const record = fake.requests[before]!;
    expect(record.finished).toBe(false);
    expect(record.chunksSent).toBe(0);
    expect(record.billed.completionTokens).toBeGreaterThan(0);
    expect(record.billed.completionTokens).toBeLessThan(1000);
  });

  it('reports the whole thinking as output when the stream is read to its end', async () => {
    const before = fake.requests.length;
    const res = await call('/v1/messages', claude(true), 'reasoning=400,thinking=3,words=4').response;
    let text = '';
    for await (const chunk of res) text += (chunk as Buffer).toString();
    expect(text).toContain('"output_tokens":407');
    expect(fake.requests[before]!.billed.completionTokens).toBe(407);
  });
});
