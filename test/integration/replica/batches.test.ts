/**
 * Batch jobs on replicas (docs/batches.md): who owns a file and a batch is shared through
 * PostgreSQL, so a batch created through node A is retrieved and listed through node B by its key
 * (and by no other key, through either node), while node A, whose ledger holds the batch's row,
 * follows and settles it — once, node B never touching it.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { toFile } from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';
import { startHarness, UPSTREAM_KEY, type Harness } from '../responses/harness.js';

let pg: TempPostgres;
let fake: FakeUpstream;
let a: Harness;
let b: Harness;
const paths = [tempDatabasePath().path, tempDatabasePath().path];

beforeAll(async () => {
  pg = await createTempPostgres();
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  const started = await Promise.all(paths.map((path) => startHarness(fake, path, { TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_BATCH_POLL: '30ms' })));
  a = started[0]!;
  b = started[1]!;
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await fake?.close();
  await pg?.drop();
  for (const path of paths) rmSync(dirname(path), { recursive: true, force: true });
});

async function createKey(name: string): Promise<string> {
  const issued = await new PgKeyStore(pg.pool).createKey({ name, policy: { limits: [] } });
  await waitFor(() => [a, b].every((h) => h.tollgate.keyStore.authKeyById(issued.view.id) !== undefined), `key ${name} on both nodes`);
  return issued.key;
}

it('a batch created through one node is seen through another by its key only, and settled once by the first', async () => {
  const owner = await createKey('batch-owner');
  const other = await createKey('batch-other');
  const line = JSON.stringify({
    custom_id: 'q',
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 },
  });
  const file = await a.client(owner).files.create({ file: await toFile(Buffer.from(line), 'batch.jsonl'), purpose: 'batch' });
  const batch = await b
    .client(owner)
    .batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, { headers: { 'x-fake-scenario': 'batchMs=400' } });

  // Created through B: B's ledger holds the row, and B settles it; A sees it and lists it for its key.
  expect((await a.client(owner).batches.retrieve(batch.id)).id).toBe(batch.id);
  expect((await a.client(owner).batches.list()).data.map((x) => x.id)).toEqual([batch.id]);
  for (const h of [a, b]) await expect(h.client(other).batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });

  const row = () =>
    b.tollgate.database.sqlite.prepare('SELECT status, cost_micros FROM ledger WHERE upstream_request_id = ?').get(batch.id) as
      { status: string; cost_micros: number } | undefined;
  await waitFor(() => row()?.status === 'ok', 'node B to settle its batch', 20_000);
  expect(row()!.cost_micros).toBeGreaterThan(0);
  // The row is on disk before the job is marked settled in PostgreSQL and the line is logged.
  await b.tollgate.batches.follower.scan();
  await waitFor(() => b.logs.lines.some((l) => l.msg === 'batch settled' && l.batchId === batch.id), "node B's settlement log line");
  await a.tollgate.batches.follower.scan();
  expect(a.logs.lines.filter((l) => l.msg === 'batch settled')).toHaveLength(0);
  expect(b.logs.lines.filter((l) => l.msg === 'batch settled' && l.batchId === batch.id)).toHaveLength(1);
}, 60_000);
