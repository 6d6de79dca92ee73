/**
 * Fuzz: thousands of generated bodies — near-valid requests with fields of
 * the wrong type, arbitrary JSON, arbitrary bytes — against the real server.
 * Every answer must be well-formed (a JSON success or an OpenAI-shaped error
 * with a code), no answer may be a 5xx of our own making, and the process
 * must keep serving.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import fc from 'fast-check';
import { Pool } from 'undici';
import { waitFor } from '../../support/wait.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { RECEIPT_COMMENT, withoutReceipt } from '../../support/receipt.js';

let proxy: TestProxy;
let pool: Pool;

beforeAll(async () => {
  // Every refusal as a raw row, so every request can be found in the ledger (by default a key's
  // refusals past 60 a minute are only counted in the rollups).
  proxy = await startTestProxy({ TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_REFUSAL_ROWS: 'all' });
  pool = new Pool(proxy.server.url, { connections: 8 });
});
afterAll(async () => {
  await pool.close();
  await proxy.close();
});

const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));
const content = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc.array(fc.record({ type: fc.constantFrom('text', 'image_url', 'input_audio', 'weird'), text: anyValue, image_url: anyValue }, { requiredKeys: [] }), {
    maxLength: 4,
  }),
  anyValue,
);
const message = fc.record(
  { role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer'), anyValue), content, name: anyValue, tool_calls: anyValue },
  { requiredKeys: ['role'] },
);
const chatBody = fc.record(
  {
    model: fc.oneof(fc.constantFrom('gpt-4o-mini', 'gpt-4o', 'o4-mini', 'unknown-model'), anyValue),
    messages: fc.oneof(fc.array(message, { maxLength: 6 }), anyValue),
    stream: fc.oneof(fc.boolean(), anyValue),
    stream_options: anyValue,
    max_tokens: fc.oneof(fc.integer({ min: -5, max: 5000 }), anyValue),
    n: fc.oneof(fc.integer({ min: -1, max: 4 }), anyValue),
    tools: anyValue,
    response_format: anyValue,
  },
  { requiredKeys: [] },
);
const otherBody = fc.record(
  { model: fc.oneof(fc.constantFrom('text-embedding-3-small', 'gpt-4.1'), anyValue), input: anyValue, prompt: anyValue, instructions: anyValue },
  { requiredKeys: [] },
);
const validChat = fc.record({
  model: fc.constantFrom('gpt-4o-mini', 'gpt-4o', 'gpt-4.1-nano'),
  messages: fc.array(fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: fc.string({ maxLength: 200 }) }), {
    minLength: 1,
    maxLength: 5,
  }),
  stream: fc.boolean(),
  max_tokens: fc.integer({ min: 1, max: 200 }),
});
const payload = fc.oneof(
  { weight: 2, arbitrary: validChat.map((b) => ['/v1/chat/completions', Buffer.from(JSON.stringify(b))] as const) },
  { weight: 6, arbitrary: chatBody.map((b) => ['/v1/chat/completions', Buffer.from(JSON.stringify(b))] as const) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('/v1/embeddings', '/v1/completions', '/v1/responses'), otherBody)
      .map(([path, b]) => [path, Buffer.from(JSON.stringify(b))] as const),
  },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => ['/v1/chat/completions', Buffer.from(JSON.stringify(v) ?? '')] as const) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ['/v1/chat/completions', Buffer.from(bytes)] as const) },
);

it('answers every generated body with a well-formed response and stays up', async () => {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(payload, async ([path, body]) => {
      const res = await pool.request({ method: 'POST', path, headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json' }, body });
      const text = await res.body.text();
      seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
      expect(res.headers['x-request-id']).toMatch(/^req_/);
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        expect(res.statusCode).toBe(200);
        // The stream's last event, then the receipt comment every settled stream ends with.
        expect(text).toMatch(RECEIPT_COMMENT);
        expect(withoutReceipt(text)).toMatch(/data: \[DONE\]\s*$/);
        return;
      }
      const json = JSON.parse(text) as { error?: { message: unknown; type: unknown; code: unknown; param: unknown } };
      if (res.statusCode >= 400) {
        expect(res.statusCode, text).toBeLessThan(500);
        expect(typeof json.error?.message).toBe('string');
        expect(typeof json.error?.type).toBe('string');
        expect(typeof json.error?.code).toBe('string');
        expect(json.error?.param === null || typeof json.error?.param === 'string').toBe(true);
      } else {
        expect(res.statusCode).toBe(200);
      }
    }),
    { numRuns: 2500 },
  );
  expect((await fetch(`${proxy.server.url}/healthz`)).status).toBe(200);
  // Both kinds of answers happened: the fuzzer reached the upstream and the validators.
  expect(seen.get(200) ?? 0).toBeGreaterThan(200);
  expect(seen.get(400) ?? 0).toBeGreaterThan(500);

  // And nothing was lost: every request that passed auth has exactly one settled row. Settlements
  // and refusals' rows share a commit after the answer (one a checkpoint holds up is retried), so
  // the last ones may still be on their way: wait for all of them, then check none is doubled.
  const database = openDatabase(proxy.dbPath);
  try {
    const count = (sql: string): number => (database.sqlite.prepare(sql).get() as { n: number }).n;
    await waitFor(() => count('SELECT count(*) AS n FROM ledger') >= 2500, 'a row for each of the 2,500 requests');
    await waitFor(() => count("SELECT count(*) AS n FROM ledger WHERE status = 'pending'") === 0, 'every row settled');
    expect(count('SELECT count(*) AS n FROM ledger')).toBe(2500);
  } finally {
    database.close();
  }
}, 120_000);
