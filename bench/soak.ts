/**
 * Soak: mixed traffic through a real Tollgate process for a bounded time
 * (loopback only), sampling the proxy's resident memory and event-loop delay
 * from its own /metrics. Prints the samples and a least-squares trend of RSS
 * over the second half (after warm-up): "no growth" means the slope is within
 * noise.
 *
 * Options:
 * - `--processes 2`: that many Tollgate processes sharing one SQLite file,
 *   requests spread over them (the ledger must wait for the other process's
 *   commits, never refuse).
 * - `--saturate 64`: closed loop instead of a rate — 64 requests always in
 *   flight, every body unique (no count cache), as fast as the proxies go.
 * - `--hostile`: adds long invalid model names, floods of refusals (models a
 *   key may not use, bad bodies) and slow readers of long streams to the mix.
 * Any 5xx the mix did not ask the upstream for (ledger_unavailable above
 * all) is counted and fails the run.
 *
 * Run: npm run soak -- [--minutes 10] [--rate 150] [--max-requests 200000]
 *                      [--processes 1] [--saturate 0] [--hostile]
 */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { printTable, REPO_ROOT, startChild, startTollgate, type BenchResult } from './support.js';

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? undefined : Number(process.argv[at + 1]);
  return value === undefined || Number.isNaN(value) ? fallback : value;
}

const minutes = arg('minutes', 10);
const rate = arg('rate', 150); // requests per second, all kinds together
const maxRequests = arg('max-requests', 200_000);
const processes = Math.max(1, arg('processes', 1));
const saturate = arg('saturate', 0); // requests kept in flight; 0 = open loop at --rate
const hostile = process.argv.includes('--hostile');
const UPSTREAM_KEY = 'sk-soak';

interface Sample {
  readonly atSeconds: number;
  readonly rssMiB: number;
  readonly heapMiB: number;
  readonly loopP99Ms: number;
  readonly requests: number;
}

function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

const dir = mkdtempSync(join(tmpdir(), 'tollgate-soak-'));
const dbPath = join(dir, 'soak.db');
const setup = openDatabase(dbPath);
const store = new KeyStore(setup);
const keys = Array.from(
  { length: 20 },
  (_, i) => store.createKey({ name: `soak-${i}`, policy: { limits: [{ name: 'rpm', unit: 'requests', amount: 6000, period: 'min', burst: 600 }] } }).key,
);
// The hostile mix's refusal flood: a key that may use one model only.
const allowListKey = store.createKey({
  name: 'soak-allow-list',
  policy: { limits: [{ name: 'rpm', unit: 'requests', amount: 600_000, period: 'min', burst: 6000 }], models: ['gpt-4o-mini'] },
}).key;
setup.close();

const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
const proxies = await Promise.all(
  Array.from({ length: processes }, () =>
    startTollgate({
      TOLLGATE_UPSTREAM_URL: fake.url,
      TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
      TOLLGATE_DB: dbPath,
      // Production settings: one info line per request.
      TOLLGATE_LOG_LEVEL: 'info',
    }),
  ),
);
const origins = proxies.map((proxy) => new URL(proxy.url).origin);
const pools = origins.map((origin) => new Pool(origin, { connections: Math.max(32, Math.ceil(saturate / processes) + 8) }));

/** Unique per request and run: no two bodies alike, so nothing is answered from a cache. */
const unique = (i: number): string => `${i} ${Math.random().toString(36).slice(2)}`;

interface Kind {
  readonly weight: number;
  readonly path: string;
  readonly scenario: string;
  readonly body: (i: number) => unknown;
  readonly abortAfterMs?: number;
  /** The key to send with (default: one of the 20 soak keys). */
  readonly key?: string;
  /** Read the answer this slowly: a pause (ms) after every chunk. */
  readonly slowReadMs?: number;
  /** The mix asks for this answer: not a failure. */
  readonly expectStatus?: number;
  /** The raw body (not JSON-encoded). */
  readonly raw?: boolean;
}

const hostileKinds: Kind[] = [
  // Long names, distinct every time: 400, bounded in metrics, logs and the ledger.
  { weight: 2, path: '/v1/chat/completions', scenario: '', expectStatus: 400, body: (i) => ({ model: `${i}-${'x'.repeat(4000)}`, messages: [] }) },
  // A flood of models the key may not use: 403 (or 429 once its request limit is spent).
  {
    weight: 2,
    path: '/v1/chat/completions',
    scenario: '',
    key: allowListKey,
    expectStatus: 403,
    body: (i) => ({ model: `not-allowed-${unique(i).replace(' ', '-')}`, messages: [{ role: 'user', content: 'x' }] }),
  },
  // Bodies that are not JSON: 400.
  { weight: 1, path: '/v1/chat/completions', scenario: '', expectStatus: 400, raw: true, body: (i) => `{"model":"gpt-4o","messages":[${i}` },
  // A slow reader of a long stream.
  {
    weight: 1,
    path: '/v1/chat/completions',
    scenario: 'delay=1,words=400',
    slowReadMs: 25,
    body: (i) => ({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `slow ${unique(i)}` }] }),
  },
];

const kinds: Kind[] = [
  {
    weight: 5,
    path: '/v1/chat/completions',
    scenario: '',
    body: (i) => ({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: saturate > 0 ? `question ${unique(i)}` : `question ${i % 50}` },
      ],
    }),
  },
  {
    weight: 3,
    path: '/v1/chat/completions',
    scenario: 'delay=5,words=30',
    body: (i) => ({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: `stream ${i % 20}` }] }),
  },
  { weight: 1, path: '/v1/embeddings', scenario: '', body: (i) => ({ model: 'text-embedding-3-small', input: [`a ${i}`, `b ${i}`] }) },
  {
    weight: 1,
    path: '/v1/chat/completions',
    scenario: 'delay=20,words=100',
    body: () => ({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'long' }] }),
    abortAfterMs: 60,
  },
  {
    weight: 1,
    path: '/v1/chat/completions',
    scenario: 'status=500',
    expectStatus: 500,
    body: () => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'fail' }] }),
  },
  {
    weight: 1,
    path: '/v1/chat/completions',
    scenario: 'breakAfter=4,delay=2',
    body: () => ({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'break' }] }),
  },
];
const wheel = [...kinds, ...(hostile ? hostileKinds : [])].flatMap((kind) => Array.from({ length: kind.weight }, () => kind));

let sent = 0;
let failed = 0;
/** 5xx answers the mix did not ask for, by error code (ledger_unavailable is the one the soak watches). */
const unexpected5xx = new Map<string, number>();
const statuses = new Map<number, number>();
async function one(i: number): Promise<void> {
  const kind = wheel[i % wheel.length]!;
  const controller = new AbortController();
  const timer = kind.abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), kind.abortAfterMs);
  try {
    const res = await pools[i % pools.length]!.request({
      method: 'POST',
      path: kind.path,
      headers: { authorization: `Bearer ${kind.key ?? keys[i % keys.length]!}`, 'content-type': 'application/json', 'x-fake-scenario': kind.scenario },
      body: kind.raw ? String(kind.body(i)) : JSON.stringify(kind.body(i)),
      signal: controller.signal,
    });
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    if (res.statusCode >= 500 && kind.expectStatus !== res.statusCode) {
      const text = await res.body.text();
      const code = /"code":"([^"]*)"/.exec(text)?.[1] ?? String(res.statusCode);
      unexpected5xx.set(code, (unexpected5xx.get(code) ?? 0) + 1);
    } else if (kind.slowReadMs !== undefined) {
      for await (const _chunk of res.body) await new Promise((resolve) => setTimeout(resolve, kind.slowReadMs));
    } else {
      await res.body.dump({ limit: Number.MAX_SAFE_INTEGER });
    }
  } catch {
    if (kind.abortAfterMs === undefined && kind.scenario.indexOf('break') === -1) failed += 1;
  } finally {
    clearTimeout(timer);
  }
}

const samples: Sample[] = [];
const started = Date.now();
const endAt = started + minutes * 60_000;
const inFlight = new Set<Promise<void>>();
const launch = (): void => {
  const p = one(sent++);
  inFlight.add(p);
  void p.finally(() => {
    inFlight.delete(p);
    // Closed loop: each answer starts the next request.
    if (saturate > 0 && sent < maxRequests && Date.now() < endAt) launch();
  });
};
const load =
  saturate > 0
    ? undefined
    : setInterval(() => {
        const due = Math.round(rate / 20);
        for (let k = 0; k < due && sent < maxRequests && Date.now() < endAt; k += 1) launch();
      }, 50);
for (let k = 0; k < saturate; k += 1) launch();
const sampleEveryMs = Math.max(2000, Math.floor((minutes * 60_000) / 120));
process.stderr.write(
  `soak: ${minutes} min ${saturate > 0 ? `saturated (${saturate} in flight)` : `at ${rate} req/s`} (max ${maxRequests}) on ${processes} process(es)${hostile ? ', hostile mix' : ''}, sampling every ${sampleEveryMs / 1000} s\n`,
);
let lastSent = 0;
while (Date.now() < endAt && sent < maxRequests) {
  await new Promise((resolve) => setTimeout(resolve, sampleEveryMs));
  // The first process's memory (each runs the same code; the others are printed).
  const texts = await Promise.all(origins.map(async (origin) => (await fetch(`${origin}/metrics`)).text()));
  const [text = ''] = texts;
  samples.push({
    atSeconds: (Date.now() - started) / 1000,
    rssMiB: (metric(text, 'tollgate_process_resident_memory_bytes') ?? 0) / 2 ** 20,
    heapMiB: (metric(text, 'tollgate_nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20,
    // prom-client samples the loop every 10 ms and the histogram holds whole
    // intervals (an idle process reads ≈ 10 ms): report the delay beyond it.
    loopP99Ms: Math.max(0, (metric(text, 'tollgate_nodejs_eventloop_lag_p99_seconds') ?? 0) * 1000 - 10),
    requests: sent,
  });
  const last = samples.at(-1)!;
  const others = texts
    .slice(1)
    .map((t) => `${((metric(t, 'tollgate_process_resident_memory_bytes') ?? 0) / 2 ** 20).toFixed(1)}MiB`)
    .join(' ');
  const lockWaits = texts.reduce((sum, t) => sum + (metric(t, 'tollgate_ledger_lock_waits_total') ?? 0), 0);
  const perSecond = ((sent - lastSent) * 1000) / sampleEveryMs;
  lastSent = sent;
  process.stderr.write(
    `  t=${last.atSeconds.toFixed(0)}s rss=${last.rssMiB.toFixed(1)}MiB${others === '' ? '' : ` (others ${others})`} heap=${last.heapMiB.toFixed(1)}MiB loop-p99=${last.loopP99Ms.toFixed(1)}ms sent=${sent} (${perSecond.toFixed(0)}/s) lock-waits=${lockWaits} unexpected-5xx=${[...unexpected5xx.values()].reduce((a, b) => a + b, 0)}\n`,
  );
}
if (load !== undefined) clearInterval(load);
await Promise.allSettled([...inFlight]);
await Promise.all(pools.map((pool) => pool.close()));
await Promise.all(proxies.map((proxy) => proxy.stop()));
await fake.stop();
const dbBytes = ['', '-wal'].reduce((sum, suffix) => sum + (existsSync(dbPath + suffix) ? statSync(dbPath + suffix).size : 0), 0);

/**
 * A leak raises the floor memory returns to after each collection, so the
 * trend is fitted to per-window minima, not to every sample (a run that ends
 * on a GC peak is not growth), and over the second half of the run: in the
 * first minutes bounded caches fill (token-count memo, SQLite page cache,
 * compiled code), which is growth that stops.
 */
function floors(pick: (s: Sample) => number): Array<readonly [number, number]> {
  const windowSeconds = Math.max(10, (minutes * 60) / 10);
  const byWindow = new Map<number, { min: number; n: number }>();
  for (const sample of samples) {
    if (sample.atSeconds < (minutes * 60) / 2) continue;
    const window = Math.floor(sample.atSeconds / windowSeconds);
    const seen = byWindow.get(window) ?? { min: Number.POSITIVE_INFINITY, n: 0 };
    byWindow.set(window, { min: Math.min(seen.min, pick(sample)), n: seen.n + 1 });
  }
  // A window with only a sample or two (the run's last seconds) has no floor to speak of.
  const full = Math.max(2, Math.floor(windowSeconds / (sampleEveryMs / 1000) / 2));
  return [...byWindow].filter(([, w]) => w.n >= full).map(([window, w]) => [((window + 0.5) * windowSeconds) / 60, w.min] as const);
}
const rssFloors = floors((s) => s.rssMiB);
const heapFloors = floors((s) => s.heapMiB);
const rssSlope = rssFloors.length > 1 ? slope(rssFloors) : 0;
const heapSlope = heapFloors.length > 1 ? slope(heapFloors) : 0;
process.stderr.write(
  `heap floors (MiB): ${heapFloors.map(([, v]) => v.toFixed(1)).join(' ')}\nRSS floors (MiB): ${rssFloors.map(([, v]) => v.toFixed(1)).join(' ')}\n`,
);
const results: BenchResult[] = [
  { name: 'soak requests sent', value: sent, unit: 'req', note: `${failed} unexpected failures` },
  {
    name: 'soak unexpected 5xx',
    value: [...unexpected5xx.values()].reduce((a, b) => a + b, 0),
    unit: 'req',
    note: unexpected5xx.size === 0 ? 'none' : [...unexpected5xx].map(([code, n]) => `${code}: ${n}`).join(', '),
  },
  { name: 'soak database size at end', value: dbBytes / 2 ** 20, unit: 'MiB', note: 'file + WAL' },
  { name: 'soak RSS start → end', value: samples.at(-1)?.rssMiB ?? 0, unit: 'MiB', note: `from ${samples[0]?.rssMiB.toFixed(1)} MiB` },
  { name: 'soak RSS floor trend', value: rssSlope, unit: 'MiB/min', note: `${rssSlope < 0.5 ? 'no growth trend' : 'GROWING'} (per-window minima, 2nd half)` },
  {
    name: 'soak heap floor trend',
    value: heapSlope,
    unit: 'MiB/min',
    note: `${heapSlope < 0.5 ? 'no growth trend' : 'GROWING'} (per-window minima, 2nd half)`,
  },
  {
    name: 'soak event-loop delay p99 (median of samples)',
    value: [...samples.map((s) => s.loopP99Ms)].sort((a, b) => a - b)[samples.length >> 1] ?? 0,
    unit: 'ms',
    note: 'beyond the 10 ms sampling interval',
  },
  { name: 'soak event-loop delay p99 (worst sample)', value: Math.max(...samples.map((s) => s.loopP99Ms)), unit: 'ms' },
];
printTable(results);
const out = join(REPO_ROOT, 'bench', 'results');
mkdirSync(out, { recursive: true });
process.stderr.write(`answers by status: ${[...statuses].map(([status, n]) => `${status}: ${n}`).join(', ')}\n`);
writeFileSync(
  join(out, `soak-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
  `${JSON.stringify({ minutes, rate, processes, saturate, hostile, statuses: Object.fromEntries(statuses), samples, results }, null, 2)}\n`,
);
rmSync(dir, { recursive: true, force: true });
process.exit(failed > 0 || unexpected5xx.size > 0 ? 1 : 0);
