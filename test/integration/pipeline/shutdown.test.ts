/**
 * Graceful shutdown of the real process: SIGTERM lets in-flight streams finish — those whose
 * client left too, read on to their usage — refuses new work, exits 0, and leaves no row pending.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from 'node:http';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe } from '../../support/process.js';
import { tempDatabasePath } from '../../support/db.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { waitFor } from '../../support/wait.js';
import { withoutReceipt } from '../../support/receipt.js';

/** A database file with one key, for a spawned server. */
function keyedDatabase(): { path: string; key: string } {
  const { path } = tempDatabasePath();
  const database = openDatabase(path);
  const key = new KeyStore(database).createKey({ name: 'shutdown', policy: { limits: [] } }).key;
  database.close();
  return { path, key };
}

let fake: FakeUpstream;
beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-shutdown' });
});
afterAll(async () => {
  await fake.close();
});

function streamChat(
  url: string,
  key: string,
  scenario = 'delay=40,words=25',
): Promise<{ firstChunk: Promise<void>; body: Promise<string>; hangUp: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-fake-scenario': scenario } },
      (res) => {
        let text = '';
        let markFirst: () => void = () => undefined;
        const firstChunk = new Promise<void>((r) => (markFirst = r));
        const body = new Promise<string>((done, fail) => {
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString();
            markFirst();
          });
          res.on('end', () => done(text));
          res.on('error', fail);
        });
        resolve({ firstChunk, body, hangUp: () => req.destroy() });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
  });
}

it('finishes an in-flight stream after SIGTERM, refuses new connections, and exits 0', async () => {
  const db = keyedDatabase();
  const proc = await spawnServe({
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-shutdown',
    TOLLGATE_SHUTDOWN_TIMEOUT: '10s',
    TOLLGATE_DB: db.path,
  });
  const { firstChunk, body } = await streamChat(proc.url, db.key);
  await firstChunk;
  proc.child.kill('SIGTERM');
  // The stream keeps flowing to its end…
  const text = await body;
  expect(withoutReceipt(text).trimEnd().endsWith('data: [DONE]')).toBe(true);
  expect(text.match(/"content":"[^"]+"/g)).toHaveLength(25);
  // …and the process leaves cleanly.
  expect(await proc.exited).toBe(0);
  expect(proc.logs.some((l) => l.msg === 'shutdown complete')).toBe(true);
  // The stream's ledger row was settled before exit, not left pending.
  const after = openDatabase(db.path);
  const rows = after.sqlite.prepare('SELECT status, completion_tokens FROM ledger').all();
  after.close();
  expect(rows).toEqual([{ status: 'ok', completion_tokens: 25 }]);
  const refused = await fetch(`${proc.url}/healthz`).then(
    () => 'answered',
    (e: Error) => (e.cause as { code?: string } | undefined)?.code ?? e.message,
  );
  expect(refused).toBe('ECONNREFUSED');
});

it('cuts streams off at the shutdown deadline and still exits 0', async () => {
  const db = keyedDatabase();
  const proc = await spawnServe({
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-shutdown',
    TOLLGATE_SHUTDOWN_TIMEOUT: '300ms',
    TOLLGATE_DB: db.path,
  });
  const { firstChunk, body } = await streamChat(proc.url, db.key);
  await firstChunk;
  const sentAt = Date.now();
  proc.child.kill('SIGTERM');
  const outcome = await body.then(
    (text) => text,
    (error: Error) => `error: ${error.message}`,
  );
  expect(outcome).not.toMatch(/\[DONE\]/);
  expect(await proc.exited).toBe(0);
  expect(Date.now() - sentAt).toBeLessThan(5000);
  expect(proc.logs.some((l) => l.msg === 'shutdown deadline reached; closing remaining connections')).toBe(true);
  // Cut off, but settled, nothing left pending: at its reservation, as its usage never came
  // (src/pipeline/settle.ts, rule 4; the upstream may have generated more than was relayed).
  const after = openDatabase(db.path);
  const rows = after.sqlite.prepare('SELECT status, usage_source, error_code, completion_tokens, cost_micros, est_cost_micros FROM ledger').all();
  after.close();
  expect(rows).toEqual([
    {
      status: 'upstream_interrupted',
      usage_source: 'reserved',
      error_code: 'proxy_shutdown',
      completion_tokens: expect.any(Number),
      cost_micros: expect.any(Number),
      est_cost_micros: expect.any(Number),
    },
  ]);
  const row = rows[0] as { completion_tokens: number; cost_micros: number; est_cost_micros: number };
  expect(row.cost_micros).toBe(row.est_cost_micros);
  expect(row.completion_tokens).toBeGreaterThan(25);
  expect(proc.logs.some((l) => l.msg === 'requests still open at shutdown: upstream stopped, settled at their reservation')).toBe(true);
});

function ledgerRows(path: string): unknown[] {
  const database = openDatabase(path);
  try {
    return database.sqlite.prepare('SELECT status, usage_source, error_code, completion_tokens FROM ledger').all();
  } finally {
    database.close();
  }
}

it('reads a stream whose client left on to its usage before exiting, within the deadline', async () => {
  const db = keyedDatabase();
  const proc = await spawnServe({
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-shutdown',
    TOLLGATE_SHUTDOWN_TIMEOUT: '10s',
    TOLLGATE_DB: db.path,
  });
  const before = fake.requests.length;
  const { firstChunk, body, hangUp } = await streamChat(proc.url, db.key);
  await firstChunk;
  hangUp();
  void body.catch(() => undefined);
  proc.child.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  expect(fake.requests[before]!.finished).toBe(true);
  expect(ledgerRows(db.path)).toEqual([{ status: 'client_aborted', usage_source: 'reported', error_code: 'client_aborted', completion_tokens: 25 }]);
});

it('stops a stream whose client left still being read at the deadline: upstream aborted, settled at its reservation', async () => {
  const db = keyedDatabase();
  const proc = await spawnServe({
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-shutdown',
    TOLLGATE_SHUTDOWN_TIMEOUT: '300ms',
    TOLLGATE_DB: db.path,
  });
  const before = fake.requests.length;
  const { firstChunk, body, hangUp } = await streamChat(proc.url, db.key, 'delay=100,words=100');
  await firstChunk;
  hangUp();
  void body.catch(() => undefined);
  const sentAt = Date.now();
  proc.child.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  expect(Date.now() - sentAt).toBeLessThan(5000);
  const upstream = fake.requests[before]!;
  await waitFor(() => upstream.closedEarly, 'the upstream to see its connection closed');
  expect(upstream.finished).toBe(false);
  expect(ledgerRows(db.path)).toEqual([
    { status: 'upstream_interrupted', usage_source: 'reserved', error_code: 'proxy_shutdown', completion_tokens: expect.any(Number) },
  ]);
});
