/**
 * The stored responses' contract (src/storage/responses.ts), on one host and
 * on a replica: a response and its items belong to the key that created
 * them, are found at once (before their commit), tell what continuing them
 * bills once known, and are gone once deleted — and on a replica, a response
 * or item another node stored is found through this one, and kept here.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Backend } from '../../../src/storage/backend.js';
import { openKeyStore } from '../../../src/storage/index.js';
import { KeySync } from '../../../src/storage/postgres/key-sync.js';
import type { ResponseStore } from '../../../src/storage/sqlite/responses.js';
import { openResponseStore } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');

describeBackends('stored responses', (fixture) => {
  let backend: Backend;
  let store: ResponseStore;
  let alice: string;
  let bob: string;
  beforeEach(async () => {
    backend = await fixture.fresh();
    const keys = openKeyStore(backend);
    alice = (await keys.createKey({ name: 'alice', policy: { limits: [] } })).view.id;
    bob = (await keys.createKey({ name: 'bob', policy: { limits: [] } })).view.id;
    // A replica's node holds a copy of the keys (its responses name them).
    if (backend.kind === 'postgres') await new KeySync(backend.pool, backend.database, { url: '' }).pull();
    store = openResponseStore(backend);
  });
  afterEach(() => {
    store.flush();
  });

  const remember = (id: string, keyId: string) => store.remember({ id, keyId, requestId: `req-${id}`, createdAt: NOW, background: false, claimedUntil: 0 });

  it('finds a response’s key at once and after its commit, and nothing for an unknown id', async () => {
    remember('resp_1', alice);
    expect(await store.findOwner('resp_1')).toBe(alice);
    expect(await store.findResponse('resp_1')).toMatchObject({ keyId: alice, billedTokens: undefined });
    expect(store.flush()).toBe(true);
    expect(await store.findOwner('resp_1')).toBe(alice);
    expect(await store.findOwner('resp_unknown')).toBeUndefined();
    expect(await store.findResponse('resp_unknown')).toBeUndefined();
  });

  it('keeps what continuing a response bills once its usage is known, before and after the commit', async () => {
    remember('resp_1', alice);
    store.noteAnswer('resp_1', { billedTokens: 120 });
    expect(await store.findResponse('resp_1')).toMatchObject({ keyId: alice, billedTokens: 120 });
    remember('resp_2', bob);
    store.flush();
    store.noteAnswer('resp_2', { billedTokens: 30 });
    expect(await store.findResponse('resp_2')).toMatchObject({ keyId: bob, billedTokens: 30 });
    store.flush();
    expect(await store.findResponse('resp_2')).toMatchObject({ keyId: bob, billedTokens: 30 });
  });

  it('gives a response’s items to its key only', async () => {
    remember('resp_1', alice);
    store.noteAnswer('resp_1', { itemIds: ['msg_1', 'msg_2'] });
    expect(await store.firstItemNotOwned(alice, ['msg_1', 'msg_2'])).toBeUndefined();
    store.flush();
    expect(await store.firstItemNotOwned(alice, ['msg_1', 'msg_2'])).toBeUndefined();
    expect(await store.firstItemNotOwned(bob, ['msg_2'])).toBe('msg_2');
    expect(await store.firstItemNotOwned(alice, ['msg_1', 'msg_unknown'])).toBe('msg_unknown');
    // An item is not a response: it cannot be continued or retrieved as one.
    expect(await store.findOwner('msg_1')).toBeUndefined();
  });

  it('forgets a deleted response and its items, committed or not', async () => {
    remember('resp_1', alice);
    store.noteAnswer('resp_1', { itemIds: ['msg_1'] });
    store.flush();
    remember('resp_2', alice);
    store.markDeleted('resp_1', NOW + 1);
    store.markDeleted('resp_2', NOW + 1);
    store.flush();
    expect(await store.findOwner('resp_1')).toBeUndefined();
    expect(await store.findOwner('resp_2')).toBeUndefined();
    expect(await store.firstItemNotOwned(alice, ['msg_1'])).toBe('msg_1');
  });

  it('has nothing left to settle for a response it never stored', () => {
    expect(store.markSettled('resp_never')).toBe(true);
  });

  if (fixture.name === 'postgres') {
    it('finds a response and items another node stored, and keeps them here', async () => {
      if (backend.kind !== 'postgres') return;
      const pool = backend.pool;
      // As another node's shipper left them (src/storage/postgres/shipper.ts).
      await pool.query(
        `INSERT INTO responses (id, key_id, request_id, created_at, item_of, billed_tokens) VALUES
         ('resp_far', $1, 'req-far', $2, NULL, 75), ('msg_far', $1, 'req-far', $2, 'resp_far', NULL), ('resp_gone', $1, 'req-gone', $2, NULL, NULL)`,
        [alice, NOW],
      );
      await pool.query('UPDATE responses SET deleted_at = $1 WHERE id = $2', [NOW + 1, 'resp_gone']);
      expect(await store.findResponse('resp_far')).toEqual({ keyId: alice, billedTokens: 75 });
      expect(await store.firstItemNotOwned(bob, ['msg_far'])).toBe('msg_far');
      expect(await store.firstItemNotOwned(alice, ['msg_far'])).toBeUndefined();
      expect(await store.findOwner('resp_gone')).toBeUndefined();
      store.flush();
      const here = backend.database.sqlite.prepare('SELECT id, key_id AS keyId, item_of AS itemOf FROM responses ORDER BY id').all();
      expect(here).toEqual([
        { id: 'msg_far', keyId: alice, itemOf: 'resp_far' },
        { id: 'resp_far', keyId: alice, itemOf: null },
      ]);
    });
  }
});
