/**
 * The guarantee, end to end: several Tollgate processes sharing one Redis
 * admit at most `burst + rate·Δ` on one key, whatever the concurrency — and
 * not much less. Then Redis is killed and restarted under load: no 5xx, the
 * local fail mode keeps limiting, and leases resume.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { Pool } from 'undici';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { parseLimit } from '../../../src/domain/policy.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
let redis: RedisHandle;
const { path: db } = tempDatabasePath();
let key: string;
let warmKey: string;
const procs: Array<TollgateProcess & { url: string }> = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-cluster' });
  redis = await startRedis();
  const setup = openDatabase(db);
  const store = new KeyStore(setup);
  key = store.createKey({ name: 'hot', policy: { limits: [parseLimit('requests:10/s,burst=10')] } }).key;
  warmKey = store.createKey({ name: 'warm-up', policy: { limits: [parseLimit('requests:1000/s')] } }).key;
  setup.close();
  // Kept as each one starts, so afterAll stops those that did even if another fails to start.
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      procs.push(await spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-cluster', TOLLGATE_DB: db, TOLLGATE_REDIS_URL: redis.url }));
    }),
  );
  // Warm every process up (code paths compiled, Redis connected, leases known) on another key,
  // so the measured window is not spent on start-up costs.
  await hammer(1500, warmKey);
}, 60_000);

afterAll(async () => {
  for (const proc of procs) {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  await redis.stop();
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

interface Tally {
  ok: number;
  limited: number;
  other: Map<number, number>;
}

/** 16 clients per process, hammering one key for `ms`. */
async function hammer(ms: number, onKey = key): Promise<Tally> {
  const tally: Tally = { ok: 0, limited: 0, other: new Map() };
  const stopAt = Date.now() + ms;
  const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
  await Promise.all(
    procs.map(async (proc) => {
      const pool = new Pool(proc.url, { connections: 16 });
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (Date.now() < stopAt) {
            const res = await pool.request({
              method: 'POST',
              path: '/v1/chat/completions',
              headers: { authorization: `Bearer ${onKey}`, 'content-type': 'application/json' },
              body,
            });
            await res.body.dump();
            if (Date.now() > stopAt) break; // answered after the window: not counted either way
            if (res.statusCode === 200) tally.ok += 1;
            else if (res.statusCode === 429) tally.limited += 1;
            else tally.other.set(res.statusCode, (tally.other.get(res.statusCode) ?? 0) + 1);
          }
        }),
      );
      await pool.close();
    }),
  );
  return tally;
}

describe('4 proxy processes × 16 clients on one key (burst 10, 10/s)', () => {
  it('admit at most 40 and at least 36 in 3 seconds', async () => {
    const startedAt = Date.now();
    const tally = await hammer(3000);
    expect(tally.other.size, JSON.stringify([...tally.other])).toBe(0);
    expect(tally.limited).toBeGreaterThan(100);
    // Count admissions where they happened: ledger rows of the hot key, by arrival, in the window.
    const database = openDatabase(db);
    const rows = database.sqlite
      .prepare(
        "SELECT l.created_at AS created_at, l.completed_at AS completed_at FROM ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.name = 'hot' AND l.status != 'rejected' ORDER BY l.created_at",
      )
      .all() as Array<{ created_at: number; completed_at: number | null }>;
    database.close();
    const admitted = rows.filter((r) => r.created_at >= startedAt && r.created_at < startedAt + 3000).length;
    expect(admitted).toBeLessThanOrEqual(40);
    expect(admitted).toBeGreaterThanOrEqual(36);
    // And over every sliding window: at most burst + rate·Δ. A row's created_at is the request's
    // arrival, before its body was read and counted; the limiter admitted it some time between
    // then and its end. So a window [one's arrival, another's end] surely holds the admissions of
    // the requests that lie wholly inside it: never more than the bucket allowed over it. (A row not
    // settled yet has no end: it is inside no window.)
    const spans = rows.map((r) => ({ from: r.created_at, to: r.completed_at ?? Number.POSITIVE_INFINITY }));
    for (const { from } of spans) {
      for (const { to } of spans) {
        if (to < from || to === Number.POSITIVE_INFINITY) continue;
        const inside = spans.filter((span) => span.from >= from && span.to <= to).length;
        expect(inside, `${inside} admitted in ${to - from} ms`).toBeLessThanOrEqual(10 + 10 * ((to - from) / 1000) + 1);
      }
    }
  });

  it('keep serving through a Redis crash and restart: no 5xx, limits still enforced, leases resume', async () => {
    // Let the bucket refill and leases expire from the previous test.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const load = hammer(6000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await redis.kill9();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await redis.restart();
    const tally = await load;
    expect(tally.other.size, JSON.stringify([...tally.other])).toBe(0);
    // In the local fail mode each node keeps a safe share (rate/N, burst/N): still limited.
    expect(tally.limited).toBeGreaterThan(100);
    expect(tally.ok).toBeLessThanOrEqual(10 + 10 * 6 + 10); // a lease may be spent on top, never N-fold
    expect(tally.ok).toBeGreaterThan(15);
    // After the restart the nodes lease from Redis again.
    await waitFor(
      async () => {
        const res = await fetch(`${procs[0]!.url}/metrics`);
        const text = await res.text();
        return /tollgate_ratelimit_degraded\{reason="redis_unavailable"\} 0/.test(text);
      },
      'node 0 to leave the fail mode',
      15_000,
    );
  });
});
