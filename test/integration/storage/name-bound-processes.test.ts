/**
 * Two `tollgate serve` processes sharing one SQLite file hold one bound on a
 * key's distinct end users and tags a day: the decision is taken inside each
 * process's write transaction, against the count both keep in the file.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { tempDatabasePath } from '../../support/db.js';
import { expectNamedRollupsEqualRows } from '../../unit/storage/rollup-checks.js';

let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
const procs: Array<TollgateProcess & { url: string }> = [];
const BOUND = { users: 15, tags: 20 };

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-bound' });
});
afterAll(async () => {
  for (const proc of procs) {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

it('keeps at most the bound plus (other) rows when two processes on one file see twice the bound of names', async () => {
  const setup = openDatabase(db);
  const key = new KeyStore(setup).createKey({ name: 'shared', policy: { limits: [] } }).key;
  setup.close();
  const env = {
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-bound',
    TOLLGATE_DB: db,
    TOLLGATE_MAX_END_USERS: String(BOUND.users),
    TOLLGATE_MAX_TAGS: String(BOUND.tags),
  };
  procs.push(...(await Promise.all([spawnServe(env), spawnServe(env)])));
  // Each name is new: 2× the bound of end users, and tags in pairs, 2× the bound of tags; alternating processes, all at once.
  const sent = 2 * BOUND.users;
  const statuses = await Promise.all(
    Array.from({ length: sent }, async (_, i) => {
      const res = await fetch(`${procs[i % 2]!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'x-fake-scenario': i % 3 === 0 ? 'status=400' : 'words=3',
          'x-tollgate-user': `user-${i}`,
          'x-tollgate-tags': `a-${i},b-${i}`,
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
      });
      await res.text();
      return res.status;
    }),
  );
  expect(statuses.filter((s) => s === 200)).toHaveLength(sent - Math.ceil(sent / 3));
  // Both processes settle their rows (a settlement may share a commit after its answer).
  for (const proc of procs.splice(0)) {
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
  }
  const after = openDatabase(db);
  try {
    const names = (table: string, column: string) => after.sqlite.prepare(`SELECT ${column} FROM ${table}`).pluck().all() as string[];
    const users = names('rollups_end_users', 'end_user');
    const tags = names('rollups_tags', 'tag');
    expect(users).toHaveLength(BOUND.users + 1);
    expect(tags).toHaveLength(BOUND.tags + 1);
    expect(users).toContain('(other)');
    expect(after.sqlite.prepare(`SELECT count(*) FROM ledger WHERE status = 'pending'`).pluck().get()).toBe(0);
    expect(after.sqlite.prepare('SELECT count(*) FROM ledger').pluck().get()).toBe(sent);
    expectNamedRollupsEqualRows(after.sqlite);
  } finally {
    after.close();
  }
});
