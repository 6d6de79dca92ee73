/** The SQLite stored responses' commits on a locked file: tried again, never slept on, never reported as a failure. */
import { afterEach, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { ResponseStore } from '../../../src/storage/sqlite/responses.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { holdWriteLock, openTempDatabase, type TempDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

const opened: TempDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.remove();
});

it('commits on the ledger connection: a locked file is tried again without sleeping on the event loop or reporting an error', async () => {
  const db = openTempDatabase();
  opened.push(db);
  // The shared connection would wait a minute for the lock: a store committing there would hang this test.
  db.database.sqlite.pragma('busy_timeout = 60000');
  const keyId = new KeyStore(db.database).createKey({ name: 'k', policy: { limits: [] } }).view.id;
  // As `tollgate serve` opens them: the ledger writer sets its connection's busy timeout (0).
  const writer = new SqliteLedgerWriter(db.database);
  const errors: unknown[] = [];
  const store = new ResponseStore(db.database, { onError: (error) => errors.push(error) });
  const stored = (): unknown => db.database.sqlite.prepare("SELECT key_id AS keyId FROM responses WHERE id = 'resp_1'").get();

  const locker = new Database(db.path);
  locker.exec('BEGIN IMMEDIATE');
  store.remember({ id: 'resp_1', keyId, requestId: 'req-1', createdAt: Date.now(), background: false, claimedUntil: 0 });
  expect(store.flush()).toBe(false);
  // Not committed, still the key's (from memory), and a lock is nothing to report.
  expect(await store.findOwner('resp_1')).toBe(keyId);
  expect(errors).toEqual([]);
  locker.exec('COMMIT');
  locker.close();
  await waitFor(() => stored() !== undefined, 'the retried commit');
  expect(stored()).toEqual({ keyId });
  expect(errors).toEqual([]);
  // The retry cleared its own timer, never another kind of handle: clearImmediate given a Timeout breaks
  // Node's queue of immediates, and the ledger writer's commits (and this) would never run again.
  await new Promise((resolve) => setImmediate(resolve));
  const rowCommitted = writer.begin({
    requestId: 'req-2',
    keyId,
    tenantId: null,
    createdAt: Date.now(),
    endpoint: 'responses',
    model: 'gpt-4o-mini',
    stream: false,
    estPromptTokens: 1,
    estCompletionTokens: 1,
    estCostMicros: 1,
    priceKnown: true,
  });
  await rowCommitted;
  writer.close();
});

it('waits for the lock at shutdown: the last stored responses are written even while another process holds it', async () => {
  const db = openTempDatabase();
  opened.push(db);
  const keyId = new KeyStore(db.database).createKey({ name: 'k', policy: { limits: [] } }).view.id;
  const writer = new SqliteLedgerWriter(db.database);
  const store = new ResponseStore(db.database);
  // A WAL restart, or another process's commit, holds the lock as the proxy shuts down.
  const lock = await holdWriteLock(db.path, 300);
  store.remember({ id: 'resp_1', keyId, requestId: 'req-1', createdAt: Date.now(), background: false, claimedUntil: 0 });
  expect(store.close()).toBe(true);
  expect(db.database.sqlite.prepare("SELECT key_id AS keyId FROM responses WHERE id = 'resp_1'").get()).toEqual({ keyId });
  await lock.released;
  writer.close();
});
