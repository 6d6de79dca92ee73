/**
 * The bound on a key's distinct end users and tags per day, on a real SQLite
 * file: past it new names count under `(other)`, decided inside the writer's
 * transaction so that writers on other connections agree; the rollups stay the
 * sum of their rows; a new end user with limits or a budget is refused instead.
 */
import { afterEach, expect, it } from 'vitest';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { Completion, PendingEntry, Rejection } from '../../../src/storage/ledger.js';
import { TollgateError } from '../../../src/domain/errors.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { expectLongerRollupsEqualRows, expectNamedRollupsEqualRows } from './rollup-checks.js';

const opened: TempDatabase[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.remove();
});

const T0 = Date.parse('2026-11-21T10:00:00Z');
const BOUNDS = { endUsers: 5, tags: 4 };

function setup() {
  const db = openTempDatabase();
  opened.push(db);
  const keyId = new KeyStore(db.database).createKey({ name: 'bounded', policy: { limits: [] } }).view.id;
  const folded = { endUsers: 0, tags: 0, refused: 0 };
  const writer = new SqliteLedgerWriter(db.database, {
    nameBounds: BOUNDS,
    onCommit: (stats) => {
      folded.endUsers += stats.foldedEndUsers;
      folded.tags += stats.foldedTags;
      folded.refused += stats.refusedEndUsers;
    },
  });
  return { db, keyId, writer, folded };
}

function pending(keyId: string, id: string, overrides: Partial<PendingEntry> = {}): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    createdAt: T0,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    estPromptTokens: 100,
    estCompletionTokens: 1000,
    estCostMicros: 615,
    priceKnown: true,
    ...overrides,
  };
}

function completion(id: string, overrides: Partial<Completion> = {}): Completion {
  return {
    requestId: id,
    completedAt: T0 + 500,
    status: 'ok',
    httpStatus: 200,
    promptTokens: 90,
    cachedTokens: 0,
    completionTokens: 20,
    reasoningTokens: 0,
    costMicros: 26,
    usageSource: 'reported',
    latencyMs: 500,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: null,
    ...overrides,
  };
}

function refusal(keyId: string, id: string, overrides: Partial<Rejection> = {}): Rejection {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    createdAt: T0,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    status: 'rejected',
    httpStatus: 429,
    errorCode: 'rate_limit_exceeded',
    reason: 'rate_limit',
    estPromptTokens: 0,
    estCompletionTokens: 0,
    estCostMicros: 0,
    ...overrides,
  };
}

function names(db: TempDatabase, table: 'rollups_end_users' | 'rollups_tags'): string[] {
  const column = table === 'rollups_end_users' ? 'end_user' : 'tag';
  return (db.database.sqlite.prepare(`SELECT ${column} FROM ${table} ORDER BY ${column}`).pluck().all() as string[]).sort();
}

it('counts end users and tags past the bound under (other), and keeps every rollup the sum of its rows', async () => {
  const { db, keyId, writer, folded } = setup();
  // Twice the bound of distinct end users and tags, in three commits; some requests carry two tags.
  const entries = Array.from({ length: 2 * BOUNDS.endUsers }, (_, i) =>
    pending(keyId, `r${i}`, { endUser: `user-${i}`, tags: i % 2 === 0 ? [`tag-${i}`, `tag-${i + 1}`] : [`tag-${i}`] }),
  );
  await Promise.all(entries.slice(0, 3).map((entry) => writer.begin(entry)));
  await Promise.all(entries.slice(3, 7).map((entry) => writer.begin(entry)));
  await Promise.all(entries.slice(7).map((entry) => writer.begin(entry)));
  // Settle most of them: a settlement moves the rows its pending state moved.
  entries.slice(0, 8).forEach((entry, i) => writer.complete(completion(entry.requestId, i % 3 === 0 ? { status: 'upstream_error', costMicros: 0 } : {})));
  // A request of an end user and a tag that have rows still counts in them.
  await writer.begin(pending(keyId, 'again', { endUser: 'user-0', tags: ['tag-0'] }));
  expect(writer.flush()).toBe(true);

  const users = names(db, 'rollups_end_users');
  const tags = names(db, 'rollups_tags');
  expect(users).toEqual(['(other)', 'user-0', 'user-1', 'user-2', 'user-3', 'user-4']);
  expect(tags).toHaveLength(BOUNDS.tags + 1);
  expect(tags).toContain('(other)');
  // The (other) rows count what they stand for: five requests' end users, and each request with a tag past the bound once.
  const other = db.database.sqlite.prepare(`SELECT requests FROM rollups_end_users WHERE end_user = '(other)'`).pluck().get();
  expect(other).toBe(5);
  expect(folded.endUsers).toBe(5);
  // Tags 0–3 came first (6 of the 15 uses); requests 4–9 carried only later ones, r4, r6 and r8 two each.
  expect(folded.tags).toBe(9);
  expect(db.database.sqlite.prepare(`SELECT requests FROM rollups_tags WHERE tag = '(other)'`).pluck().get()).toBe(6);
  // Raw rows keep the request's own end user and tags.
  expect(db.database.sqlite.prepare(`SELECT end_user, tags FROM ledger WHERE request_id = 'r9'`).get()).toEqual({ end_user: 'user-9', tags: 'tag-9' });
  expectNamedRollupsEqualRows(db.database.sqlite);
  expectLongerRollupsEqualRows(db.database.sqlite);
});

it('holds the bound across writers on other connections, each deciding inside its own transaction', async () => {
  const { db, keyId, writer } = setup();
  const second = openDatabase(db.path);
  try {
    const other = new SqliteLedgerWriter(second, { nameBounds: BOUNDS });
    // Interleaved commits of two writers, each new end user and tag once, 3× the bound in all.
    for (let i = 0; i < 3 * BOUNDS.endUsers; i += 1) {
      const target = i % 2 === 0 ? writer : other;
      await target.begin(pending(keyId, `x${i}`, { endUser: `u-${i}`, tags: [`t-${i}`] }));
    }
    // A settlement through the other writer, which did not begin it, reads the row's own decision.
    other.complete(completion('x14', { costMicros: 40 }));
    writer.complete(completion('x1', { costMicros: 41 }));
    expect(other.flush()).toBe(true);
    expect(writer.flush()).toBe(true);
    expect(names(db, 'rollups_end_users')).toHaveLength(BOUNDS.endUsers + 1);
    expect(names(db, 'rollups_tags')).toHaveLength(BOUNDS.tags + 1);
    expect(db.database.sqlite.prepare('SELECT end_users, tags FROM rollup_names').get()).toEqual({ end_users: BOUNDS.endUsers, tags: BOUNDS.tags });
    expectNamedRollupsEqualRows(db.database.sqlite);
  } finally {
    second.close();
  }
});

it('refuses a new end user with limits or a budget once the key is at the bound, and keeps budgeted tags exact', async () => {
  const { db, keyId, writer, folded } = setup();
  const exact = { endUser: true, tags: ['billing'] };
  await Promise.all(Array.from({ length: BOUNDS.endUsers }, (_, i) => writer.begin(pending(keyId, `b${i}`, { endUser: `user-${i}`, exact }))));
  // Tags fill their bound with ordinary ones.
  await writer.begin(pending(keyId, 'fill', { tags: ['a', 'b', 'c', 'd'] }));
  const refused = await writer.begin(pending(keyId, 'new-user', { endUser: 'user-new', tags: ['e'], exact })).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(refused).toBeInstanceOf(TollgateError);
  expect((refused as TollgateError).code).toBe('too_many_end_users');
  expect((refused as TollgateError).status).toBe(429);
  expect((refused as TollgateError).headers['x-should-retry']).toBe('false');
  // Nothing of it was written, and its tag did not take a place.
  expect(db.database.sqlite.prepare(`SELECT count(*) FROM ledger WHERE request_id = 'new-user'`).pluck().get()).toBe(0);
  expect(folded.refused).toBe(1);
  // An end user already counted today still passes; a budgeted tag past the bound keeps its own row.
  await writer.begin(pending(keyId, 'known-user', { endUser: 'user-2', tags: ['billing', 'zzz'], exact }));
  // The same new end user on a key whose policy has no per-user rules is counted under (other).
  await writer.begin(pending(keyId, 'plain', { endUser: 'user-new', tags: ['e'] }));
  expect(writer.flush()).toBe(true);
  expect(names(db, 'rollups_tags')).toEqual(['(other)', 'a', 'b', 'billing', 'c', 'd']);
  expect(names(db, 'rollups_end_users')).toEqual(['(other)', 'user-0', 'user-1', 'user-2', 'user-3', 'user-4']);
  expectNamedRollupsEqualRows(db.database.sqlite);
});

it('never creates an end-user or tag row for a refusal: it counts in the name’s row or under (other)', async () => {
  const { db, keyId, writer } = setup();
  await writer.begin(pending(keyId, 'seen', { endUser: 'alice', tags: ['search'] }));
  writer.reject(refusal(keyId, 'no-1', { endUser: 'alice', tags: ['search', 'fresh'] }));
  writer.reject(refusal(keyId, 'no-2', { endUser: 'mallory-1', tags: ['fresh-2'] }));
  writer.reject(refusal(keyId, 'no-3', { endUser: 'mallory-2', status: 'invalid_request', httpStatus: 400, errorCode: 'invalid_json', reason: 'other' }));
  // A budgeted tag is the exception: the policy names it, and its refusals show under it.
  writer.reject(
    refusal(keyId, 'no-4', { tags: ['nightly', 'fresh-3'], errorCode: 'insufficient_quota', reason: 'budget', exact: { endUser: false, tags: ['nightly'] } }),
  );
  expect(writer.flush()).toBe(true);
  expect(names(db, 'rollups_end_users')).toEqual(['(other)', 'alice']);
  expect(names(db, 'rollups_tags')).toEqual(['(other)', 'nightly', 'search']);
  expect(db.database.sqlite.prepare(`SELECT rejected_budget FROM rollups_tags WHERE tag = 'nightly'`).pluck().get()).toBe(1);
  expect(db.database.sqlite.prepare(`SELECT rejected_rate_limit FROM rollups_end_users WHERE end_user = 'alice'`).pluck().get()).toBe(1);
  expect(db.database.sqlite.prepare(`SELECT rejected_rate_limit, errors FROM rollups_end_users WHERE end_user = '(other)'`).get()).toEqual({
    rejected_rate_limit: 1,
    errors: 1,
  });
  // The bound was not used by them: five new end users still get rows of their own.
  await Promise.all(Array.from({ length: BOUNDS.endUsers - 1 }, (_, i) => writer.begin(pending(keyId, `n${i}`, { endUser: `new-${i}` }))));
  expect(names(db, 'rollups_end_users').filter((name) => name.startsWith('new-'))).toHaveLength(BOUNDS.endUsers - 1);
  expectNamedRollupsEqualRows(db.database.sqlite);
});

it('starts each day with the whole bound', async () => {
  const { db, keyId, writer } = setup();
  for (const [day, at] of [
    ['first', T0],
    ['second', T0 + 86_400_000],
  ] as const) {
    await Promise.all(
      Array.from({ length: BOUNDS.endUsers + 2 }, (_, i) => writer.begin(pending(keyId, `${day}-${i}`, { endUser: `user-${i}`, createdAt: at }))),
    );
  }
  const perDay = db.database.sqlite
    .prepare(`SELECT day, count(*) AS n FROM rollups_end_users WHERE end_user <> '(other)' GROUP BY day ORDER BY day`)
    .all() as Array<{ n: number }>;
  expect(perDay.map((row) => row.n)).toEqual([BOUNDS.endUsers, BOUNDS.endUsers]);
  expectNamedRollupsEqualRows(db.database.sqlite);
});
