/**
 * Stored responses on replicas: who owns a response is shared through
 * PostgreSQL, so a response created through node A is retrieved, cancelled
 * and deleted through node B by its key (and by no other key), while node A,
 * which holds the job's ledger row, settles it.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { NotFoundError } from 'openai';
import type { Response } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { waitFor } from '../../support/wait.js';
import { scenario, startHarness, UPSTREAM_KEY, type Harness } from '../responses/harness.js';

let pg: TempPostgres;
let fake: FakeUpstream;
let a: Harness;
let b: Harness;
const paths = [tempDatabasePath().path, tempDatabasePath().path];

beforeAll(async () => {
  pg = await createTempPostgres();
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  const started = await Promise.all(paths.map((path) => startHarness(fake, path, { TOLLGATE_DATABASE_URL: pg.url })));
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

/** A key created once in PostgreSQL, once both nodes have it. */
async function createKey(name: string): Promise<{ key: string; id: string }> {
  const issued = await new PgKeyStore(pg.pool).createKey({ name, policy: { limits: [] } });
  await waitFor(() => [a, b].every((h) => h.tollgate.keyStore.authKeyById(issued.view.id) !== undefined), `key ${name} on both nodes`);
  return { key: issued.key, id: issued.view.id };
}

/** Node A's outbox is empty: the owners of its responses are in PostgreSQL (normally within the shipper's 100 ms idle turn). */
async function shipped(h: Harness): Promise<void> {
  await waitFor(() => h.tollgate.replica!.shipper.depth() === 0, 'the node to ship its outbox');
}

it('a background response created through one node is retrieved and cancelled through another, and settled by the first', async () => {
  const { key } = await createKey('owner');
  const created = await a.client(key).responses.create({ model: 'gpt-4o-mini', input: 'A long job.', background: true }, scenario('jobMs=600000'));
  await shipped(a);

  const throughB = b.client(key);
  const retrieved = await throughB.responses.retrieve(created.id);
  expect(retrieved.id).toBe(created.id);
  expect(['queued', 'in_progress']).toContain(retrieved.status);
  expect((await throughB.responses.cancel(created.id)).status).toBe('cancelled');

  // The job's reservation and ledger row are node A's: its poller sees the cancel and settles.
  const requestId = created._request_id!;
  await waitFor(() => a.ledgerRow(requestId)?.status !== 'pending', 'node A to settle the cancelled job', 20_000);
  expect(a.ledgerRow(requestId)).toMatchObject({ status: 'client_aborted', cost_micros: 0, error_code: 'response_cancelled' });
  expect(b.ledgerRow(requestId)).toBeUndefined();
});

it('another key gets the API’s 404 through either node, without the upstream being asked', async () => {
  const { key: owner } = await createKey('owner-2');
  const { key: other } = await createKey('other');
  const created = await a.client(owner).responses.create({ model: 'gpt-4o-mini', input: 'Mine.' });
  await shipped(a);
  const before = fake.requests.filter((r) => r.path.startsWith(`/v1/responses/${created.id}`)).length;
  for (const h of [a, b]) await expect(h.client(other).responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  expect(fake.requests.filter((r) => r.path.startsWith(`/v1/responses/${created.id}`)).length).toBe(before);
  await expect(b.client(owner).responses.retrieve('resp_never_made_anywhere')).rejects.toBeInstanceOf(NotFoundError);
});

it('a response deleted through one node is gone through every node', async () => {
  const { key, id } = await createKey('deleter');
  const created = await a.client(key).responses.create({ model: 'gpt-4o-mini', input: 'Delete me elsewhere.' });
  await shipped(a);
  await b.client(key).responses.delete(created.id);
  await shipped(b);
  expect((await pg.pool.query<{ deleted: boolean }>('SELECT deleted_at IS NOT NULL AS deleted FROM responses WHERE id = $1', [created.id])).rows).toEqual([
    { deleted: true },
  ]);
  await expect(b.client(key).responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  // Node A still holds it as its own, so it asks the upstream, which no longer has it: the same 404.
  await expect(a.client(key).responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  // A third node, knowing only PostgreSQL, answers 404 without asking.
  const third = tempDatabasePath().path;
  const c = await startHarness(fake, third, { TOLLGATE_DATABASE_URL: pg.url });
  try {
    await waitFor(() => c.tollgate.keyStore.authKeyById(id) !== undefined, 'the key on the third node');
    const calls = fake.requests.length;
    await expect(c.client(key).responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(fake.requests.length).toBe(calls);
  } finally {
    await c.close();
    rmSync(dirname(third), { recursive: true, force: true });
  }
});

it('a response streamed through one node is continued through another at its settled size, and its items referred to there — by its key only', async () => {
  const { key: owner } = await createKey('continuer');
  const { key: other } = await createKey('stranger');
  const stream = await a.client(owner).responses.create({ model: 'gpt-4o-mini', input: 'Remember seven.', stream: true });
  let completed: Response | undefined;
  for await (const event of stream) if (event.type === 'response.completed') completed = event.response;
  // Its size is learned when the stream is settled, after its row may have been shipped: it ships again.
  const history = completed!.usage!.input_tokens + completed!.usage!.output_tokens;
  const billed = async () =>
    (await pg.pool.query<{ billed_tokens: number | null }>('SELECT billed_tokens FROM responses WHERE id = $1', [completed!.id])).rows[0]?.billed_tokens;
  for (let i = 0; i < 200 && (await billed()) !== history; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(await billed()).toBe(history);

  const continued = await b
    .client(owner)
    .responses.create({ model: 'gpt-4o-mini', previous_response_id: completed!.id, input: 'Which?', max_output_tokens: 16 });
  const row = b.tollgate.database.sqlite.prepare('SELECT est_prompt_tokens FROM ledger WHERE request_id = ?').get(continued._request_id) as
    { est_prompt_tokens: number } | undefined;
  expect(row?.est_prompt_tokens).toBeGreaterThanOrEqual(history);
  expect(row?.est_prompt_tokens).toBeLessThan(history + 20);

  const item = completed!.output[0]!.id!;
  const referred = await b.client(owner).responses.create({ model: 'gpt-4o-mini', input: [{ type: 'item_reference', id: item }] });
  expect(referred.status).toBe('completed');
  const calls = fake.requests.length;
  for (const h of [a, b]) {
    await expect(h.client(other).responses.create({ model: 'gpt-4o-mini', previous_response_id: completed!.id, input: 'Hi' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(h.client(other).responses.create({ model: 'gpt-4o-mini', input: [{ type: 'item_reference', id: item }] })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  }
  expect(fake.requests.length).toBe(calls);
});
