/**
 * A batch outlives the process that admitted it (docs/batches.md "Settled from the results"): a
 * `tollgate serve` killed with SIGKILL while its batch runs leaves the batch claimed; once the claim
 * lapses the next process on the same database takes it over and settles it once, to the
 * micro-dollar of what the fake billed at half price.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { batchPriceOf } from '../../../src/batches/batch-estimate.js';
import { costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore } from '../../../src/storage/sqlite/keys.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe } from '../../support/process.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';
import { startHarness, UPSTREAM_KEY } from '../responses/harness.js';

const MODEL = 'gpt-4o-mini';
let fake: FakeUpstream;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(async () => {
  await fake.close();
});

it('settles, once, a batch whose process was killed while it ran', async () => {
  const { path } = tempDatabasePath();
  const setup = openDatabase(path);
  const key = new SqliteKeyStore(setup).createKey({ name: 'crashed', policy: { limits: [] } }).key;
  setup.close();
  // Looks every 300 ms; its claims last 1.2 s.
  const proc = await spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY, TOLLGATE_DB: path, TOLLGATE_BATCH_POLL: '300ms' });
  const client = new OpenAI({ baseURL: `${proc.url}/v1`, apiKey: key, maxRetries: 0 });
  let batchId: string;
  try {
    const lines = [0, 1, 2].map((i) =>
      JSON.stringify({
        custom_id: `q-${i}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: MODEL, messages: [{ role: 'user', content: `q ${i}` }], max_tokens: 30 },
      }),
    );
    const file = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'batch.jsonl'), purpose: 'batch' });
    const batch = await client.batches.create(
      { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
      { headers: { 'x-fake-scenario': 'batchMs=4000' } },
    );
    batchId = batch.id;
    // The killed process had claimed it and looked at it at least once.
    await waitFor(
      () => fake.requests.some((r) => r.method === 'GET' && r.path === `/v1/batches/${batch.id}` && r.headers['x-client-request-id'] === undefined),
      'the first look',
    );
  } finally {
    proc.child.kill('SIGKILL');
    await proc.exited;
  }

  const next = await startHarness(fake, path, { TOLLGATE_BATCH_POLL: '50ms' });
  try {
    const row = () =>
      next.tollgate.database.sqlite.prepare('SELECT status, cost_micros FROM ledger WHERE upstream_request_id = ?').get(batchId) as
        { status: string; cost_micros: number } | undefined;
    await waitFor(() => row()?.status === 'ok', 'the next process to settle the batch', 30_000);
    const price = batchPriceOf(resolvePrice(MODEL, next.tollgate.config.prices));
    const billed = fake.requests.filter((r) => r.billed?.batchId === batchId && r.status === 200);
    expect(billed).toHaveLength(3);
    expect(row()!.cost_micros).toBe(billed.reduce((sum, r) => sum + costMicroUsd(r.billed!, price), 0));
    await next.tollgate.batches.follower.scan();
    expect(next.logs.lines.filter((l) => l.msg === 'batch settled' && l.batchId === batchId)).toHaveLength(1);
  } finally {
    await next.close();
  }
}, 90_000);
