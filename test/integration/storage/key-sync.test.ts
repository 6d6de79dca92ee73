/**
 * A node's copy of keys and tenants follows PostgreSQL whatever happened
 * between two pulls — names handed from one key to another, a rotation, a
 * tenant renamed — and its key cache answers as PostgreSQL would
 * (src/storage/postgres/key-sync.ts: PostgreSQL only by nature).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { KeyCache } from '../../../src/keys/cache.js';
import { PostgresKeyStore } from '../../../src/storage/postgres/keys.js';
import { KeySync } from '../../../src/storage/postgres/key-sync.js';
import { SqliteKeyStore } from '../../../src/storage/sqlite/keys.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

let pg: TempPostgres;
let local: TempDatabase;

beforeEach(async () => {
  pg = await createTempPostgres();
  local = openTempDatabase();
});
afterEach(async () => {
  local.remove();
  await pg.drop();
});

it('applies a batch of changes that passes names between keys and tenants, in one pull', async () => {
  const store = new PostgresKeyStore(pg.pool);
  const sync = new KeySync(pg.pool, local.database, { url: pg.url });
  const a = await store.createKey({ name: 'x', tenant: 'team-a', policy: { limits: [] } });
  await store.createTenant('team-b');
  expect(await sync.pull()).toBe(3);
  const cache = new KeyCache(new SqliteKeyStore(local.database));
  expect(cache.lookup(a.key)?.name).toBe('x');

  // Between two pulls: x becomes y, a new key takes x, the tenants swap names, y is rotated.
  await store.updateKey('x', { name: 'y' });
  const b = await store.createKey({ name: 'x', tenant: 'team-b', policy: { limits: [] } });
  await store.updateTenant('team-a', { name: 'team-tmp' });
  await store.updateTenant('team-b', { name: 'team-a' });
  await store.updateTenant('team-tmp', { name: 'team-b' });
  const rotated = await store.rotateKey('y');
  expect(await sync.pull()).toBeGreaterThanOrEqual(4);
  cache.refresh();

  const localStore = new SqliteKeyStore(local.database);
  const pick = (k: { id: string; name: string; tenant: string | null; prefix: string; status: string }) => ({
    id: k.id,
    name: k.name,
    tenant: k.tenant,
    prefix: k.prefix,
    status: k.status,
  });
  expect(localStore.listKeys({ includeRevoked: true }).map(pick)).toEqual((await store.listKeys({ includeRevoked: true })).map(pick));
  expect(localStore.listTenants().map((t) => [t.id, t.name])).toEqual((await store.listTenants()).map((t) => [t.id, t.name]));
  expect(cache.lookup(a.key)).toBeUndefined(); // rotated away
  expect(cache.lookup(rotated.key)?.name).toBe('y');
  expect(cache.lookup(b.key)?.name).toBe('x');
  expect(await sync.pull()).toBe(0);
});

it("carries a runaway pause and its resume to the node's cache, as it carries a revocation", async () => {
  const store = new PostgresKeyStore(pg.pool, () => 5000);
  const sync = new KeySync(pg.pool, local.database, { url: pg.url });
  const loop = await store.createKey({ name: 'loop', policy: { limits: [] } });
  await sync.pull();
  const cache = new KeyCache(new SqliteKeyStore(local.database));
  expect(cache.lookup(loop.key)?.throttle).toBeUndefined();

  await store.throttleKey('loop', 4000, 'paused: running away');
  expect(await sync.pull()).toBe(1);
  cache.refresh();
  expect(cache.lookup(loop.key)?.throttle).toEqual({ at: 4000, reason: 'paused: running away' });

  await store.resumeKey('loop');
  expect(await sync.pull()).toBe(1);
  cache.refresh();
  expect(cache.lookup(loop.key)?.throttle).toBeUndefined();
  expect(cache.lookup(loop.key)?.resumedAt).toBe(5000);

  // A session's pause travels the same way.
  await store.pauseOwner('loop', { level: 'session', name: 'agent-1' }, 6000, 'session paused');
  expect(await sync.pull()).toBe(1);
  cache.refresh();
  expect(cache.lookup(loop.key)?.pauses).toEqual([{ level: 'session', name: 'agent-1', at: 6000, reason: 'session paused' }]);
});

it("carries an operator's suspension and its lifting to the node's cache and copy", async () => {
  const store = new PostgresKeyStore(pg.pool, () => 7000);
  const sync = new KeySync(pg.pool, local.database, { url: pg.url });
  const leaky = await store.createKey({ name: 'leaky', policy: { limits: [] } });
  await sync.pull();
  const cache = new KeyCache(new SqliteKeyStore(local.database));
  expect(cache.lookup(leaky.key)?.suspendedAt).toBeUndefined();

  await store.suspendKey('leaky', { kind: 'admin', id: 'adm_alice0000000', name: 'alice', role: 'operator' });
  expect(await sync.pull()).toBe(1);
  cache.refresh();
  expect(cache.lookup(leaky.key)?.suspendedAt).toBe(7000);
  expect(new SqliteKeyStore(local.database).getKey('leaky')).toMatchObject({ status: 'suspended', suspended: { at: 7000, by: 'alice' } });

  await store.unsuspendKey('leaky');
  expect(await sync.pull()).toBe(1);
  cache.refresh();
  expect(cache.lookup(leaky.key)?.suspendedAt).toBeUndefined();
  expect(new SqliteKeyStore(local.database).getKey('leaky').status).toBe('active');
});
