/**
 * A 200,000-row ledger export streams: the proxy keeps serving (and
 * recording) requests while a slow client holds the export open, the export
 * holds a read snapshot only while it runs (a client that leaves releases
 * it), and every row arrives once. Memory is measured in
 * bench/export.ts, not here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';
import { fillLedger } from '../../support/ledger-rows.js';

const ADMIN = 'exports-admin-token-0123456789';
const ROWS = 200_000;
const DAY = '2026-01-15';

let proxy: TestProxy;
let probe: Database.Database;
let client: OpenAI;

beforeAll(async () => {
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  probe = new Database(proxy.dbPath);
  fillLedger(probe, { rows: ROWS, day: DAY });
  // The fill's 100 MB of WAL moved into the database now, not during the first test's checks.
  probe.pragma('busy_timeout = 5000');
  probe.pragma('wal_checkpoint(TRUNCATE)');
  probe.pragma('busy_timeout = 0');
  client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
  // The first request loads the tokenizer (seconds); not inside a test.
  await client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'warm up' }] });
}, 240_000);
afterAll(async () => {
  probe.close();
  await proxy.close();
});

const exportOf = (format: 'csv' | 'ndjson') =>
  fetch(`${proxy.server.url}/admin/api/ledger.${format}?since=${DAY}&until=${DAY}`, { headers: { authorization: `Bearer ${ADMIN}` } });

/** Whether a PASSIVE checkpoint can move every WAL frame into the database (no reader holds an older snapshot). */
function walFullyCheckpointable(): boolean {
  const [result] = probe.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
  return result !== undefined && result.busy === 0 && result.checkpointed === result.log;
}

/** Line feeds in a chunk, found natively (a byte loop over 110 MB in JS is seconds on a busy machine). */
function newlines(bytes: Uint8Array): number {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let count = 0;
  for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) count += 1;
  return count;
}

const rowsToday = () => (probe.prepare(`SELECT count(*) AS n FROM ledger WHERE created_at >= ?`).get(Date.now() - 86_400_000) as { n: number }).n;

// 200,000 rows are about 110 MB of NDJSON: seconds of work alone, over a minute on a loaded CI machine.
describe('a 200,000-row export', { timeout: 240_000 }, () => {
  it('streams every row once while the proxy keeps serving and recording requests', async () => {
    const response = await exportOf('ndjson');
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);

    // The client stalls: the export waits (backpressure) with its snapshot open, and the proxy goes on.
    const before = rowsToday();
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'during the export' }] });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    expect((await fetch(`${proxy.server.url}/healthz`)).status).toBe(200);
    await waitFor(() => rowsToday() > before, 'the request to be in the ledger');
    expect(walFullyCheckpointable()).toBe(false);

    // Counted as bytes (a test that decoded 100 MB line by line would measure itself).
    let lines = 0;
    let last = new Uint8Array(0);
    const count = (bytes: Uint8Array) => {
      lines += newlines(bytes);
      last = Buffer.concat([last, bytes]).subarray(-4096);
    };
    count(first.value!);
    expect(JSON.parse(new TextDecoder().decode(first.value!).split('\n')[0]!)).toMatchObject({
      key_name: 'default',
      status: 'ok',
      request_id: `fill-${DAY}-0`,
    });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      count(value);
    }
    expect(lines).toBe(ROWS);
    const tail = new TextDecoder().decode(last).split('\n');
    expect(tail.pop()).toBe('');
    expect(JSON.parse(tail.pop()!)).toMatchObject({ request_id: `fill-${DAY}-${ROWS - 1}` });
    // Done: the export's connection is closed, nothing holds the WAL back.
    await waitFor(walFullyCheckpointable, 'the WAL to be checkpointable after the export');
  });

  it('releases its snapshot when the client leaves mid-way, and the next export is whole', async () => {
    const response = await exportOf('csv');
    const reader = response.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'during the export' }] });
    expect(walFullyCheckpointable()).toBe(false);
    await reader.cancel();
    await waitFor(walFullyCheckpointable, 'the abandoned export to release its snapshot');

    const again = await exportOf('csv');
    let records = 0;
    for await (const chunk of again.body as unknown as AsyncIterable<Uint8Array>) records += newlines(chunk);
    expect(records).toBe(ROWS + 1);
  });
});
