/**
 * `tollgate serve --workers 2`, without Redis, end to end: two processes on
 * one port, whose limits and budgets are those of one process — the workers
 * lease from their primary (src/coordination/ipc-primary.ts). A worker that
 * dies is replaced and the ledger keeps every request; SIGTERM drains all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { Pool } from 'undici';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { parseLimit } from '../../../src/domain/policy.js';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { ledgerTotals } from '../../support/budget-run.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnTollgate, type TollgateProcess } from '../../support/process.js';
import { tempDatabasePath } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
const keys: Record<'hot' | 'warm' | 'budget' | 'free', { key: string; id: string }> = {} as never;
let proc: TollgateProcess;
let url: string;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-workers' });
  const setup = openDatabase(db);
  const store = new KeyStore(setup);
  const issue = (name: string, policy: Parameters<KeyStore['createKey']>[0]['policy']) => {
    const issued = store.createKey({ name, policy });
    return { key: issued.key, id: issued.view.id };
  };
  keys.hot = issue('hot', { limits: [parseLimit('requests:10/s,burst=10')] });
  keys.warm = issue('warm-up', { limits: [parseLimit('requests:1000/s')] });
  keys.budget = issue('budgeted', { limits: [], budget: { microUsd: 20_000, period: 'day' } });
  keys.free = issue('free', { limits: [] });
  setup.close();
  proc = spawnTollgate(['serve', '--workers', '2'], {
    TOLLGATE_PORT: '0',
    TOLLGATE_LOG_LEVEL: 'info',
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-workers',
    TOLLGATE_DB: db,
  });
  await waitFor(
    async () => {
      const exited = await Promise.race([proc.exited, Promise.resolve(undefined)]);
      if (exited !== undefined) throw new Error(`serve --workers 2 exited (${String(exited)}):\n${proc.stderr.join('\n')}`);
      return proc.logs.some((line) => line.msg === 'tollgate workers listening');
    },
    'both workers to listen',
    // Three tsx starts: on a loaded 2-core machine one alone has taken 5 s and more.
    120_000,
  );
  url = String(proc.logs.find((line) => line.msg === 'tollgate workers listening')!.url);
  // Warm both workers up on another key, so the measured window is not spent on start-up costs.
  await hammer(1500, keys.warm.key);
}, 150_000);

afterAll(async () => {
  if (proc.child.exitCode === null && proc.child.signalCode === null) {
    proc.child.kill('SIGKILL');
    for (const pid of workerPids()) killQuietly(pid);
  }
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every worker the primary started, from its log. */
function workerPids(): number[] {
  return proc.logs.filter((line) => line.msg === 'worker listening').map((line) => Number(line.pid));
}

/** Workers that logged a forwarded request of `keyId`. */
function pidsServing(keyId: string): Set<number> {
  return new Set(proc.logs.filter((line) => line.msg === 'request' && line.keyId === keyId).map((line) => Number(line.pid)));
}

interface Tally {
  ok: number;
  limited: number;
  other: Map<number, number>;
}

/** 32 clients on the one port, hammering one key for `ms`. */
async function hammer(ms: number, key: string): Promise<Tally> {
  const tally: Tally = { ok: 0, limited: 0, other: new Map() };
  const stopAt = Date.now() + ms;
  const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
  const pool = new Pool(url, { connections: 32 });
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (Date.now() < stopAt) {
        const res = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
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
  return tally;
}

describe('serve --workers 2 without Redis', () => {
  it('admits at most burst + rate·Δ on one key across both workers, in every window (burst 10, 10/s, 32 clients, 3 s)', async () => {
    const startedAt = Date.now();
    const tally = await hammer(3000, keys.hot.key);
    expect(tally.other.size, JSON.stringify([...tally.other])).toBe(0);
    // Demand exceeded the limit (how far depends on how much CPU the shared machine leaves the clients).
    expect(tally.limited).toBeGreaterThan(0);
    // Both workers admitted requests of the hot key: the limit is shared, not held by one of them.
    await waitFor(() => pidsServing(keys.hot.id).size === 2, 'a request log line of the hot key from each worker', 10_000);
    // Count admissions where they happened: ledger rows of the hot key, by arrival, in the window.
    const database = openDatabase(db);
    const rows = database.sqlite
      .prepare("SELECT created_at FROM ledger WHERE key_id = ? AND status != 'rejected' ORDER BY created_at")
      .all(keys.hot.id) as Array<{ created_at: number }>;
    database.close();
    const admitted = rows.filter((r) => r.created_at >= startedAt && r.created_at < startedAt + 3000).length;
    expect(admitted).toBeLessThanOrEqual(40);
    expect(admitted).toBeGreaterThanOrEqual(30);
    // Over every sliding window: at most burst + rate·Δ, plus one for the ms the ledger's clock rounds.
    // `created_at` is when a request arrived; it is admitted once its body is read and estimated,
    // which on a loaded machine can come up to ~0.3 s later, so a window of arrivals holds the
    // admissions of up to Δ + 0.3 s (seen: 38 arrivals in 2,643 ms; 36 in 2,254 ms during a full
    // CI run). A limiter per worker would still fail this at once: two bursts of 10 arrive within a
    // few ms (20 against a bound of 14).
    const ADMISSION_LAG_S = 0.3;
    const times = rows.map((r) => r.created_at);
    for (let i = 0; i < times.length; i += 1) {
      for (let j = i; j < times.length; j += 1) {
        const bound = 10 + 10 * ((times[j]! - times[i]!) / 1000 + ADMISSION_LAG_S) + 1;
        expect(j - i + 1, `${j - i + 1} admitted in ${times[j]! - times[i]!} ms`).toBeLessThanOrEqual(bound);
      }
    }
  });

  it('holds one budget across both workers under a concurrent wave that each worker alone would overspend', async () => {
    // $0.02 a day; each request reserves, and the upstream bills, about 1,000 output tokens of gpt-4o-mini
    // ($0.60 / 1M): ~33 fit. Each worker's own view of the shared ledger lags its peer by up to a second
    // (src/budgets/spend-tracker.ts), so a per-process check would let each worker admit ~33 of the 80.
    const budgetMicroUsd = 20_000;
    const key = keys.budget;
    const billedBefore = fake.requests.length;
    const send = async (pool: Pool, scenario: string) => {
      const res = await pool.request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
        body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 1000, messages: [{ role: 'user', content: 'write' }] }),
      });
      const text = await res.body.text();
      return { status: res.statusCode, code: res.statusCode === 200 ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code };
    };
    // Both workers read the budget's spend first, then the wave comes within that read's lifetime.
    const warm = new Pool(url, { connections: 4 });
    await Promise.all(Array.from({ length: 4 }, () => send(warm, 'words=1')));
    await warm.close();
    const pool = new Pool(url, { connections: 80 });
    const wave = await Promise.all(Array.from({ length: 80 }, () => send(pool, 'words=1000,delay=300')));
    await pool.close();
    await fake.settled();
    await waitFor(() => ledgerTotals([db]).pending === 0, 'every admitted request to settle', 10_000);

    const database = openDatabase(db);
    const { cost, admitted } = database.sqlite
      .prepare(
        "SELECT coalesce(sum(cost_micros), 0) AS cost, count(*) AS admitted FROM ledger WHERE key_id = ? AND status NOT IN ('rejected', 'invalid_request')",
      )
      .get(key.id) as { cost: number; admitted: number };
    database.close();
    const price = resolvePrice('gpt-4o-mini', builtinPriceTable);
    const bill = fake.requests.slice(billedBefore).reduce((sum, request) => sum + costMicroUsd(request.billed, price), 0);
    expect(
      wave.every((r) => r.status === 200 || r.code === 'insufficient_quota'),
      JSON.stringify(wave.filter((r) => r.status !== 200)),
    ).toBe(true);
    expect(cost).toBeLessThanOrEqual(budgetMicroUsd);
    expect(bill).toBe(cost);
    // Used, not just refused: the budget is spent nearly whole.
    expect(cost).toBeGreaterThan(budgetMicroUsd * 0.8);
    expect(admitted).toBeLessThan(4 + 40);
    // Both workers admitted requests of the budget.
    await waitFor(() => pidsServing(key.id).size === 2, 'a request log line of the budget key from each worker', 10_000);
  }, 60_000);

  it('answers /metrics for every worker at once (aggregated by the primary)', async () => {
    const database = openDatabase(db);
    const { n } = database.sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status NOT IN ('rejected', 'pending')").get() as { n: number };
    database.close();
    // Whichever worker answers, the count of forwarded requests is the whole cluster's.
    for (let i = 0; i < 4; i++) {
      const text = await (await fetch(`${url}/metrics`)).text();
      const total = [...text.matchAll(/^tollgate_requests_total\{[^}]*\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
      expect(total).toBeGreaterThanOrEqual(n);
    }
  });

  it('replaces a worker killed with SIGKILL, and the ledger has a row for every request the upstream saw', async () => {
    const [victim, survivor] = workerPids();
    const servedBefore = fake.requests.length;
    const slowBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'take your time' }] });
    const pool = new Pool(url, { connections: 6 });
    const slow = Array.from({ length: 6 }, async () => {
      try {
        const res = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { authorization: `Bearer ${keys.free.key}`, 'content-type': 'application/json', 'x-fake-scenario': 'delay=3000' },
          body: slowBody,
        });
        await res.body.dump();
        return res.statusCode;
      } catch {
        return 'cut' as const; // its worker died under it
      }
    });
    await waitFor(() => fake.requests.length === servedBefore + 6, 'all 6 slow requests to reach the upstream', 10_000);
    process.kill(victim!, 'SIGKILL');
    const outcomes = await Promise.all(slow);
    await pool.close();
    const cut = outcomes.filter((o) => o === 'cut').length;
    expect(cut).toBeGreaterThanOrEqual(1);
    expect(outcomes.filter((o) => o === 200).length).toBe(6 - cut);

    await waitFor(() => workerPids().length === 3, 'the primary to start a new worker', 30_000);
    expect(proc.logs.some((line) => line.msg === 'worker exited; starting another' && line.pid === victim)).toBe(true);
    expect(isRunning(survivor!)).toBe(true);
    // The new worker serves: quick requests all succeed, on both workers again. Counted over 3 s: a
    // worker fresh from start-up (its tsx compile, the tokenizer's load) can keep the loaded machine
    // from answering anything for the first half second (seen once: 0 answers in a 500 ms window).
    const quick = await hammer(3000, keys.free.key);
    expect(quick.other.size, JSON.stringify([...quick.other])).toBe(0);
    expect(quick.ok).toBeGreaterThan(10);
    await waitFor(() => pidsServing(keys.free.id).has(workerPids()[2]!), 'the new worker to serve', 10_000);

    // Every request the upstream served has its row; exactly those cut by the kill stay pending, at their estimate.
    // The hammer's last settlements share a commit after their answers: wait for them to land first.
    const readRows = () => {
      const database = openDatabase(db);
      try {
        return database.sqlite.prepare('SELECT request_id, status FROM ledger WHERE key_id = ?').all(keys.free.id) as Array<{
          request_id: string;
          status: string;
        }>;
      } finally {
        database.close();
      }
    };
    await waitFor(() => readRows().filter((r) => r.status === 'pending').length <= cut, 'the settlements of the requests not cut', 10_000);
    const rows = readRows();
    const byId = new Map(rows.map((r) => [r.request_id, r.status]));
    const served = fake.requests.slice(servedBefore).map((r) => String(r.headers['x-client-request-id']));
    for (const id of served) expect(byId.has(id), `ledger row for ${id}`).toBe(true);
    expect(rows.filter((r) => r.status === 'pending')).toHaveLength(cut);
  }, 60_000);

  it('drains every worker on SIGTERM: a request in flight completes, then all exit cleanly', async () => {
    const pids = workerPids().filter(isRunning);
    expect(pids).toHaveLength(2);
    const inFlight = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.free.key}`, 'content-type': 'application/json', 'x-fake-scenario': 'delay=1500' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'one more' }] }),
    });
    const servedBefore = fake.requests.length;
    await waitFor(() => fake.requests.length > servedBefore, 'the request to reach the upstream', 10_000);
    proc.child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    await res.text();
    expect(await proc.exited).toBe(0);
    for (const pid of pids) expect(isRunning(pid), `worker ${pid} still running`).toBe(false);
    expect(proc.logs.some((line) => line.msg === 'shutdown complete' && line.pid === undefined)).toBe(true);
    // The drained request was settled before its worker exited.
    const id = String(fake.requests[servedBefore]!.headers['x-client-request-id']);
    const database = openDatabase(db);
    const row = database.sqlite.prepare('SELECT status FROM ledger WHERE request_id = ?').get(id) as { status: string } | undefined;
    database.close();
    expect(row?.status).toBe('ok');
  }, 60_000);
});
