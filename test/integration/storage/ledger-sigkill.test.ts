/**
 * A request that reached the upstream is never missing from the ledger, even
 * when the proxy is killed with SIGKILL right after forwarding it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe } from '../../support/process.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
const { path: db } = tempDatabasePath();

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-kill' });
});
afterAll(async () => {
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

it('has a row for every request the upstream served, after kill -9', async () => {
  const setup = openDatabase(db);
  const key = new KeyStore(setup).createKey({ name: 'killed', policy: { limits: [] } }).key;
  setup.close();
  const proc = await spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-kill', TOLLGATE_DB: db });

  const send = async (scenario: string, stream: boolean): Promise<number | 'cut'> => {
    try {
      const res = await fetch(`${proc.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
        body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'count to a hundred' }] }),
      });
      await res.text();
      return res.status;
    } catch {
      return 'cut'; // the proxy died under it
    }
  };
  const quick = await Promise.all(Array.from({ length: 10 }, () => send('', false)));
  expect(quick.every((status) => status === 200)).toBe(true);
  const inFlight = [...Array.from({ length: 10 }, () => send('delay=10000', false)), ...Array.from({ length: 10 }, () => send('delay=300,words=100', true))];
  await waitFor(() => fake.requests.length === 30, 'all 30 requests to reach the upstream', 10_000);

  proc.child.kill('SIGKILL');
  expect(await proc.exited).toBe('SIGKILL');
  const outcomes = await Promise.all(inFlight);
  expect(outcomes.every((o) => o === 'cut')).toBe(true); // none of them finished

  const after = openDatabase(db);
  const rows = after.sqlite.prepare('SELECT request_id, status FROM ledger').all() as Array<{ request_id: string; status: string }>;
  after.close();
  const byId = new Map(rows.map((r) => [r.request_id, r.status]));
  const served = fake.requests.map((r) => String(r.headers['x-client-request-id']));
  expect(served).toHaveLength(30);
  for (const id of served) expect(byId.has(id), `ledger row for ${id}`).toBe(true);
  // The in-flight ones were never settled by the dead process: still pending at their estimate.
  expect(rows.filter((r) => r.status === 'pending').length).toBeGreaterThanOrEqual(20);
});
