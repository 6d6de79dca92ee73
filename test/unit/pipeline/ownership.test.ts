/**
 * The one ownership check (src/pipeline/ownership.ts) over a real response store on a real
 * SQLite file: a key refers only to its own responses and items, whether they are committed
 * yet or not; file ids and conversations belong to nobody; a continued response's settled size
 * comes back with the check.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TollgateError } from '../../../src/domain/errors.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { checkReferences } from '../../../src/pipeline/ownership.js';
import { ResponseStore } from '../../../src/storage/sqlite/responses.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';

let db: TempDatabase;
let store: ResponseStore;
let mine: string;
let theirs: string;

const none = { itemIds: [], fileIds: [] };

beforeEach(() => {
  db = openTempDatabase();
  const keys = new KeyStore(db.database);
  mine = keys.createKey({ name: 'mine', policy: { limits: [] } }).view.id;
  theirs = keys.createKey({ name: 'theirs', policy: { limits: [] } }).view.id;
  store = new ResponseStore(db.database);
});
afterEach(() => {
  store.flush();
  db.remove();
});

function remember(id: string, keyId: string): void {
  store.remember({ id, keyId, requestId: `req_${id}`, createdAt: 1, background: false, claimedUntil: 0 });
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; param: string | null; status: number }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TollgateError);
  const { code, param, status } = error as TollgateError;
  return { code, param, status };
}

describe('previous_response_id', () => {
  it("is the key's own response, queued or committed, with its settled size once known", async () => {
    remember('resp_a', mine);
    expect(await checkReferences(mine, { ...none, previousResponseId: 'resp_a' }, store)).toEqual({ historyTokens: undefined });
    store.noteAnswer('resp_a', { billedTokens: 1234 });
    expect(await checkReferences(mine, { ...none, previousResponseId: 'resp_a' }, store)).toEqual({ historyTokens: 1234 });
    store.flush();
    expect(await checkReferences(mine, { ...none, previousResponseId: 'resp_a' }, store)).toEqual({ historyTokens: 1234 });
    // Learned after the row was committed: kept the same way.
    remember('resp_b', mine);
    store.flush();
    store.noteAnswer('resp_b', { billedTokens: 99 });
    expect(await checkReferences(mine, { ...none, previousResponseId: 'resp_b' }, store)).toEqual({ historyTokens: 99 });
    store.flush();
    expect(await checkReferences(mine, { ...none, previousResponseId: 'resp_b' }, store)).toEqual({ historyTokens: 99 });
  });

  it("is a 404 for another key's response, an unknown one, a deleted one, an item's id, or with no store at all", async () => {
    remember('resp_t', theirs);
    remember('resp_d', mine);
    store.noteAnswer('resp_d', { itemIds: ['msg_d'] });
    store.flush();
    store.markDeleted('resp_d', 2);
    remember('resp_m', mine);
    store.noteAnswer('resp_m', { itemIds: ['msg_m'] });
    const expected = { code: 'previous_response_not_found', param: 'previous_response_id', status: 404 };
    for (const id of ['resp_t', 'resp_nobody', 'resp_d', 'msg_m']) {
      expect(await refusal(checkReferences(mine, { ...none, previousResponseId: id }, store))).toEqual(expected);
    }
    expect(await refusal(checkReferences(mine, { ...none, previousResponseId: 'resp_m' }, undefined))).toEqual(expected);
  });
});

describe('item_reference', () => {
  it("accepts the key's own items and refuses the first that is not, naming it", async () => {
    remember('resp_1', mine);
    store.noteAnswer('resp_1', { itemIds: ['msg_1', 'rs_1'] });
    remember('resp_2', theirs);
    store.noteAnswer('resp_2', { itemIds: ['msg_2'] });
    for (const flush of [false, true]) {
      if (flush) store.flush();
      expect(await checkReferences(mine, { ...none, itemIds: ['msg_1', 'rs_1'] }, store)).toEqual({ historyTokens: undefined });
      expect(await refusal(checkReferences(mine, { ...none, itemIds: ['msg_1', 'msg_2'] }, store))).toEqual({
        code: 'item_not_found',
        param: 'input',
        status: 404,
      });
      // A response id is not an item.
      await refusal(checkReferences(mine, { ...none, itemIds: ['resp_1'] }, store));
    }
    await refusal(checkReferences(mine, { ...none, itemIds: ['msg_1'] }, undefined));
  });

  it('the items of a deleted response are gone with it', async () => {
    remember('resp_x', mine);
    store.noteAnswer('resp_x', { itemIds: ['msg_x'] });
    store.flush();
    store.markDeleted('resp_x', 5);
    await refusal(checkReferences(mine, { ...none, itemIds: ['msg_x'] }, store));
  });

  it('items of a response not stored here (store: false) belong to nobody', async () => {
    store.noteAnswer('resp_unstored', { itemIds: ['msg_u'], billedTokens: 10 });
    await refusal(checkReferences(mine, { ...none, itemIds: ['msg_u'] }, store));
  });
});

describe('conversations and files', () => {
  it('belong to no key: refused before anything is looked up', async () => {
    expect(await refusal(checkReferences(mine, { ...none, conversationId: 'conv_1' }, store))).toEqual({
      code: 'conversation_not_found',
      param: 'conversation',
      status: 404,
    });
    expect(await refusal(checkReferences(mine, { ...none, fileIds: ['file-1'] }, store))).toEqual({ code: 'file_not_found', param: 'file_id', status: 404 });
  });
});
