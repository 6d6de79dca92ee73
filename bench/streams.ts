/**
 * Many open streams (the target: 2,000 concurrent streams from a slow
 * upstream, a chunk every 50 ms for 10 s each, through one process: relay
 * delay p99 ≤ 5 ms, ≤ 50 KB per open stream, no errors).
 *
 * The same load goes directly to the upstream, through the bare node:http hop
 * and through Tollgate, rounds interleaved in random order. Each proxy runs
 * alone on core 1; this process (the load) and bench/slow-upstream.ts share
 * core 0 (shared/BENCH-NOTES.md). Every chunk carries the monotonic time the
 * upstream wrote it; relay delay is the time from then until this process reads
 * it, so "direct" measures what the load core itself adds and a proxy's cost is
 * its figure minus direct's. Each of the 2,000 clients opens its first stream
 * at a staggered moment over one stream's length, then opens the next as soon
 * as one ends, so streams start and end at a steady ~200/s; figures are taken
 * in a window after that ramp, and every stream is let finish before the next
 * target runs. Memory per stream is what the open streams keep alive: each
 * proxy runs bench/gc-probe.ts, which makes a full collection on request; the
 * proxy's V8 heapUsed after one at the end of the window minus after one at
 * idle just before the round, and its RSS after one at the end of the window
 * minus at idle before its first measured round, over the streams being
 * relayed then (a connection still waiting in the accept queue holds none). The RSS sampled
 * during the window (garbage included) is reported beside it. Event-loop delay
 * comes from Tollgate's /metrics (prom-client resets it at every scrape, so
 * each 1 s scrape covers the second before it). Stream start is the time from
 * a client's connect() to the response's first byte, over the ramp and the
 * window: what a burst of new streams waits for the proxy to accept and admit
 * them.
 *
 * Run: npx tsx bench/streams.ts [--quick] [--rounds N] [--streams N] [--only tollgate]
 *      [--cpu-prof DIR]   (Tollgate writes a .cpuprofile there when it exits)
 *      [--priority -10]   (nice value for this process, its children and its autogroup; below 0
 *                          needs root; start it with `setsid` so only the bench's session is raised)
 *      [--log FILE]       (Tollgate's log lines, one per request, saved there)
 * or: npm run bench -- --only streams
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { nowMicros, openStream, streamRequest } from './stamped-stream.js';
import { findFreePort, issueBenchKey, median, plainJs, printTable, processCpuMicros, REPO_ROOT, shuffled, tollgateEntry, type BenchResult } from './support.js';

const INTERVAL_MS = 50;
const CHUNKS = 200; // 10 s per stream

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Proc {
  readonly child: ChildProcess;
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts a node process pinned to `core`; resolves with its URL (a {"url"} line, or Tollgate's /healthz). */
async function startPinned(core: number, args: string[], env: Record<string, string>, healthz?: string, logFile?: string): Promise<Proc> {
  const child = spawn('taskset', ['-c', String(core), process.execPath, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${String(code)}`))));
  let url: string;
  if (healthz === undefined) {
    url = await Promise.race([
      exited,
      new Promise<string>((resolve) => {
        createInterface({ input: child.stdout! }).on('line', (line) => {
          if (line.startsWith('{"url"')) resolve((JSON.parse(line) as { url: string }).url);
        });
      }),
    ]);
  } else {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
      const up = await fetch(`${healthz}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) throw new Error('tollgate serve did not answer /healthz within 30 s');
      await sleep(50);
    }
    url = `${healthz}/v1`;
  }
  exited.catch(() => undefined);
  if (logFile !== undefined) child.stdout!.pipe(createWriteStream(logFile));
  else child.stdout!.resume();
  return {
    child,
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
      }),
  };
}

function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/** Time the main thread has spent runnable but waiting for a CPU, in seconds (the scheduler's share of any delay). */
function runqueueWaitSeconds(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
}

interface Scrape {
  heapUsed: number;
  lagP50: number;
  lagP99: number;
  lagMax: number;
}

async function scrape(origin: string): Promise<Scrape> {
  // A kept-alive connection the server has just closed resets the first try.
  const get = async (): Promise<string> => (await fetch(`${origin}/metrics`)).text();
  const text = await get().catch(get);
  const value = (name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    heapUsed: value('tollgate_nodejs_heap_size_used_bytes'),
    lagP50: value('tollgate_nodejs_eventloop_lag_p50_seconds') * 1000,
    lagP99: value('tollgate_nodejs_eventloop_lag_p99_seconds') * 1000,
    lagMax: value('tollgate_nodejs_eventloop_lag_max_seconds') * 1000,
  };
}

interface Target {
  readonly name: string;
  readonly url: string;
  readonly authorization: string;
  /** The proxy's pid (none for direct). */
  readonly pid?: number;
  /** Where the proxy's bench/gc-probe.ts writes its memory after a full collection. */
  readonly gcFile?: string;
  /** Tollgate's origin, for /metrics. */
  readonly metrics?: string;
}

interface Collected {
  rss: number;
  heapUsed: number;
}

/** Asks a proxy's bench/gc-probe.ts for a full collection; resolves with its memory after it. */
async function collected(pid: number, file: string): Promise<Collected> {
  const lines = (): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
  const before = lines().length;
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 30_000;
  for (;;) {
    const now = lines();
    if (now.length > before) return JSON.parse(now.at(-1)!) as Collected;
    if (Date.now() > deadline) throw new Error(`no answer from bench/gc-probe.ts in process ${pid} within 30 s`);
    await sleep(20);
  }
}

interface RoundResult {
  delays: Float64Array;
  /** ms from connect() to the first response byte, streams opened in the ramp and the window. */
  starts: number[];
  streamsDone: number;
  errors: number;
  errorKinds: Map<string, number>;
  /** Client connections open (median of 1 s samples), waiting ones included. */
  openMedian: number;
  /** Streams being relayed: their response has begun and not ended (median of 1 s samples). */
  activeMedian: number;
  /** RSS after a full collection at the window's end, minus after one at idle, per open stream. */
  rssPerStream: number;
  /** The same for V8's heapUsed. */
  heapPerStream: number;
  /** Median RSS sampled during the window (uncollected garbage included), minus idle after a collection, per open stream. */
  rssWindowPerStream: number;
  rssPeak: number;
  lagP50: number;
  lagP99: number;
  lagMax: number;
  cpuPerSecond: number;
  /** The proxy's CPU time over the chunks relayed in the window, in µs: comparable on a busy machine. */
  cpuPerChunk: number;
  /** Runqueue wait of the proxy's main thread per second of the window (0.01 = 10 ms/s). */
  waitPerSecond: number;
}

/** Runs the load against one target: ramp, measured window, drain. */
async function runRound(target: Target, options: { streams: number; windowMs: number }): Promise<RoundResult> {
  const url = new URL(target.url);
  const body = JSON.stringify({
    model: 'gpt-4o-mini',
    stream: true,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Tell me a long story about a fox.' },
    ],
  });
  const request = streamRequest(url, target.authorization, body);
  let delays = new Float64Array(1 << 20);
  let count = 0;
  let measuring = false;
  let stopping = false;
  let open = 0;
  let active = 0;
  let streamsDone = 0;
  let errors = 0;
  const errorKinds = new Map<string, number>();
  let phase = 'ramp';
  const starts: number[] = [];
  const fail = (what: string): void => {
    const kind = `${what} (${phase})`;
    errors += 1;
    errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
  };

  /** One stream over a fresh connection; resolves when the server closes it. */
  const stream = async (): Promise<void> => {
    const opened = nowMicros();
    const counted = phase !== 'drain';
    let began = false;
    open += 1;
    const outcome = await openStream(url, request, {
      firstByte: (at) => {
        began = true;
        active += 1;
        if (counted) starts.push((at - opened) / 1000);
      },
      chunk: (at, stamp) => {
        if (!measuring) return;
        if (count === delays.length) {
          const bigger = new Float64Array(delays.length * 2);
          bigger.set(delays);
          delays = bigger;
        }
        delays[count++] = (at - stamp) / 1000;
      },
    });
    open -= 1;
    if (began) active -= 1;
    streamsDone += 1;
    const { status, chunks, done, error } = outcome;
    if (error !== undefined) {
      fail(`socket ${error} ${status === '' ? 'before any response' : done ? 'after [DONE]' : chunks < CHUNKS ? 'mid-stream' : 'before [DONE]'}`);
    } else if (status !== '200') fail(`status ${status || 'none'}`);
    else if (!done || chunks !== CHUNKS) fail(`incomplete (${chunks} chunks${done ? '' : ', no [DONE]'})`);
  };

  // Idle: the last round's streams have closed; let their settlement finish before the collection.
  if (target.gcFile !== undefined) await sleep(2000);
  const idleMemory = target.gcFile === undefined ? undefined : await collected(target.pid!, target.gcFile);
  // A process keeps the pages it has used: after a round its idle RSS is its high-water mark, so RSS
  // is measured against the idle footprint before the first measured round (heapUsed, before each).
  if (idleMemory !== undefined && options.windowMs > 0 && !firstIdleRss.has(target.name)) firstIdleRss.set(target.name, idleMemory.rss);
  const rssBaseline = firstIdleRss.get(target.name);
  const rampMs = INTERVAL_MS * CHUNKS;
  const clients = Array.from({ length: options.streams }, async (_, i) => {
    await sleep((i * rampMs) / options.streams);
    while (!stopping) await stream();
  });

  await sleep(rampMs + 1000);
  if (target.metrics !== undefined) await scrape(target.metrics); // resets the event-loop histogram
  const cpuStart = target.pid === undefined ? 0 : processCpuMicros(target.pid) / 1e6;
  const waitStart = target.pid === undefined ? 0 : runqueueWaitSeconds(target.pid);
  measuring = true;
  phase = 'window';
  const started = performance.now();
  const rss: number[] = [];
  const actives: number[] = [];
  const opens: number[] = [];
  const lag: Scrape[] = [];
  while (performance.now() - started < options.windowMs) {
    await sleep(1000);
    opens.push(open);
    actives.push(active);
    if (target.pid !== undefined) rss.push(rssBytes(target.pid));
    if (target.metrics !== undefined) lag.push(await scrape(target.metrics));
  }
  measuring = false;
  const windowSeconds = (performance.now() - started) / 1000;
  const cpuUsed = target.pid === undefined ? NaN : processCpuMicros(target.pid) / 1e6 - cpuStart;
  const cpuPerSecond = cpuUsed / windowSeconds;
  const cpuPerChunk = (cpuUsed * 1e6) / count;
  const waitPerSecond = target.pid === undefined ? NaN : (runqueueWaitSeconds(target.pid) - waitStart) / windowSeconds;
  // After the window's figures: the collection's pause must not count as relay delay.
  // Per stream relayed: a connection still in the proxy's accept queue holds none of its memory.
  const activeAtCollection = active;
  const liveMemory = target.gcFile === undefined ? undefined : await collected(target.pid!, target.gcFile);
  stopping = true;
  phase = 'drain';
  await Promise.all(clients);
  const openMedian = median(opens);
  const activeMedian = median(actives);
  const perStream = (after: number | undefined, before: number | undefined, streams: number): number =>
    after === undefined || before === undefined ? NaN : (after - before) / streams;
  return {
    delays: delays.subarray(0, count),
    starts,
    streamsDone,
    errors,
    errorKinds,
    openMedian,
    activeMedian,
    rssPerStream: perStream(liveMemory?.rss, rssBaseline, activeAtCollection),
    heapPerStream: perStream(liveMemory?.heapUsed, idleMemory?.heapUsed, activeAtCollection),
    rssWindowPerStream: perStream(rss.length === 0 ? undefined : median(rss), rssBaseline, activeMedian),
    rssPeak: rss.length === 0 ? NaN : Math.max(...rss),
    lagP50: lag.length === 0 ? NaN : median(lag.map((s) => s.lagP50)),
    lagP99: lag.length === 0 ? NaN : Math.max(...lag.map((s) => s.lagP99)),
    lagMax: lag.length === 0 ? NaN : Math.max(...lag.map((s) => s.lagMax)),
    cpuPerSecond,
    cpuPerChunk,
    waitPerSecond,
  };
}

/** Each proxy's RSS at idle, after a full collection, before its first measured round. */
const firstIdleRss = new Map<string, number>();

/** "lo–hi" of per-round figures. */
function range(values: number[]): string {
  return `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
}

function quantile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runStreamsBench(
  options: { quick?: boolean; rounds?: number; streams?: number; only?: string; cpuProfDir?: string; priority?: number; logFile?: string } = {},
): Promise<BenchResult[]> {
  // On a shared, busy machine the scheduler's delays swamp milliseconds; a raised priority
  // (inherited by the upstream and the proxies started below) keeps them out of the figures.
  // Linux's autogroups weigh sessions against each other before nice values count, so the
  // session's own weight is raised too (run the bench under `setsid` to raise only its own).
  if (options.priority !== undefined) {
    setPriority(options.priority);
    if (existsSync('/proc/self/autogroup')) writeFileSync('/proc/self/autogroup', String(options.priority));
  }
  const rounds = options.rounds ?? (options.quick ? 1 : 3);
  const streams = options.streams ?? 2000;
  const windowMs = options.quick ? 5000 : 15_000;
  const UPSTREAM_KEY = 'sk-bench-upstream';
  // The load on core 0 with the upstream; the proxies on core 1.
  spawnSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-streams-'));
  const upstream = await startPinned(0, ['--import', 'tsx', 'bench/slow-upstream.ts', String(INTERVAL_MS), String(CHUNKS)], {});
  // Both proxies run as deployed (support.ts, tollgateEntry) and answer bench/gc-probe.ts's full collections.
  const probe = ['--expose-gc', '--import', plainJs('bench/gc-probe.ts')];
  const gcFile = (name: string): string => join(scratch, `${name}-memory.ndjson`);
  const bare = await startPinned(1, [...probe, plainJs('bench/bare-proxy.ts'), upstream.url, String(streams * 2)], { TOLLGATE_BENCH_GC_FILE: gcFile('bare') });
  const dbPath = join(scratch, 'bench.db');
  const key = issueBenchKey(dbPath);
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  const nodeArgs = options.cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir];
  const tollgate = await startPinned(
    1,
    [...nodeArgs, ...probe, tollgateEntry(), 'serve'],
    {
      TOLLGATE_BENCH_GC_FILE: gcFile('tollgate'),
      TOLLGATE_DB: dbPath,
      TOLLGATE_PORT: String(port),
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_UPSTREAM_URL: upstream.url,
      TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
      // The default (128) would queue every stream past the 128th: one upstream connection per open stream.
      TOLLGATE_UPSTREAM_CONNECTIONS: String(streams * 2),
      // Every stream is the one key's: the default (64 in flight per key) would refuse most with 429.
      TOLLGATE_MAX_IN_FLIGHT: String(streams * 2),
      TOLLGATE_LOG_LEVEL: 'info',
    },
    origin,
    options.logFile,
  );
  const all: Target[] = [
    { name: 'direct', url: upstream.url, authorization: `Bearer ${UPSTREAM_KEY}` },
    { name: 'bare', url: bare.url, authorization: `Bearer ${UPSTREAM_KEY}`, pid: bare.child.pid!, gcFile: gcFile('bare') },
    { name: 'tollgate', url: tollgate.url, authorization: `Bearer ${key}`, pid: tollgate.child.pid!, metrics: origin, gcFile: gcFile('tollgate') },
  ];
  const targets = options.only === undefined ? all : all.filter((t) => t.name === 'direct' || t.name === options.only);
  const perTarget = new Map<string, RoundResult[]>(targets.map((t) => [t.name, []]));
  try {
    // Warm-up: a short burst through each proxy (JIT, tokenizer ranks, pools).
    for (const target of targets) {
      if (target.pid !== undefined) await runRound(target, { streams: Math.min(200, streams), windowMs: 0 });
    }
    for (let round = 0; round < rounds; round += 1) {
      for (const target of shuffled(targets)) {
        process.stderr.write(`streams: round ${round + 1}/${rounds} ${target.name}…\n`);
        const result = await runRound(target, { streams, windowMs });
        perTarget.get(target.name)!.push(result);
        const sorted = Float64Array.from(result.delays).sort();
        const starts = Float64Array.from(result.starts).sort();
        process.stderr.write(
          `  p50 ${quantile(sorted, 50).toFixed(2)} ms, p99 ${quantile(sorted, 99).toFixed(2)} ms, max ${quantile(sorted, 100).toFixed(1)} ms, ` +
            `start p99 ${quantile(starts, 99).toFixed(0)} ms max ${quantile(starts, 100).toFixed(0)} ms, ` +
            `${result.errors} errors, open ${result.openMedian} (relayed ${result.activeMedian}), live RSS/stream ${(result.rssPerStream / 1024).toFixed(1)} KB, ` +
            `live heap/stream ${(result.heapPerStream / 1024).toFixed(1)} KB, window RSS/stream ${(result.rssWindowPerStream / 1024).toFixed(1)} KB, lag p99 ${result.lagP99.toFixed(1)} ms max ${result.lagMax.toFixed(1)} ms, ` +
            `CPU ${(result.cpuPerSecond * 100).toFixed(0)}% (${result.cpuPerChunk.toFixed(1)} µs per chunk), runqueue wait ${(result.waitPerSecond * 1000).toFixed(0)} ms/s\n`,
        );
        for (const [kind, n] of result.errorKinds) process.stderr.write(`  error: ${kind} × ${n}\n`);
      }
    }
  } finally {
    await Promise.all([tollgate.stop(), bare.stop(), upstream.stop()]);
    rmSync(scratch, { recursive: true, force: true });
  }

  const results: BenchResult[] = [];
  const med = (name: string, pick: (r: RoundResult) => number): number => median(perTarget.get(name)!.map(pick));
  const p = (q: number) => (r: RoundResult) => quantile(Float64Array.from(r.delays).sort(), q);
  const note = `${streams} streams, a chunk every ${INTERVAL_MS} ms, ${(INTERVAL_MS * CHUNKS) / 1000} s each; median of ${rounds} rounds`;
  for (const target of targets) {
    const n = target.name;
    results.push({ name: `streams relay delay p50 ${n}`, value: med(n, p(50)), unit: 'ms', note });
    results.push({ name: `streams relay delay p99 ${n}`, value: med(n, p(99)), unit: 'ms', note: `worst chunk ${med(n, p(100)).toFixed(1)} ms` });
    results.push({
      name: `streams relayed at once ${n}`,
      value: med(n, (r) => r.activeMedian),
      unit: 'streams',
      note: `of ${med(n, (r) => r.openMedian)} clients connected; the rest wait for the proxy to accept them`,
    });
    const start = (q: number) => (r: RoundResult) => quantile(Float64Array.from(r.starts).sort(), q);
    results.push({
      name: `streams start p99 ${n}`,
      value: med(n, start(99)),
      unit: 'ms',
      note: `connect() to first byte, ramp and window; p50 ${med(n, start(50)).toFixed(1)} ms, max ${med(n, start(100)).toFixed(0)} ms`,
    });
    if (n !== 'direct') {
      results.push({ name: `streams added p50 ${n} − direct`, value: med(n, p(50)) - med('direct', p(50)), unit: 'ms', note: '' });
      results.push({ name: `streams added p99 ${n} − direct`, value: med(n, p(99)) - med('direct', p(99)), unit: 'ms', note: 'target ≤ 5 ms (Tollgate)' });
      results.push({
        name: `streams RSS per open stream ${n}`,
        value: med(n, (r) => r.rssPerStream) / 1024,
        unit: 'KB',
        note: `live: after a full GC, window's end − idle before the first round; range ${range(perTarget.get(n)!.map((r) => r.rssPerStream / 1024))} KB; target ≤ 50 KB`,
      });
      results.push({
        name: `streams heapUsed per open stream ${n}`,
        value: med(n, (r) => r.heapPerStream) / 1024,
        unit: 'KB',
        note: `live: after a full GC; range ${range(perTarget.get(n)!.map((r) => r.heapPerStream / 1024))} KB`,
      });
      results.push({
        name: `streams RSS per open stream in the window ${n}`,
        value: med(n, (r) => r.rssWindowPerStream) / 1024,
        unit: 'KB',
        note: `garbage included: median RSS sampled − idle; peak RSS ${(med(n, (r) => r.rssPeak) / 2 ** 20).toFixed(0)} MB`,
      });
      results.push({
        name: `streams proxy CPU ${n}`,
        value: med(n, (r) => r.cpuPerSecond) * 100,
        unit: '% of a core',
        note: `its main thread waited for a CPU ${(med(n, (r) => r.waitPerSecond) * 1000).toFixed(0)} ms/s`,
      });
      results.push({
        name: `streams proxy CPU per relayed chunk ${n}`,
        value: med(n, (r) => r.cpuPerChunk),
        unit: 'µs',
        note: 'whole process, over the chunks read in the window',
      });
    }
    if (target.metrics !== undefined) {
      results.push({
        name: `streams event-loop delay p99 ${n}`,
        value: med(n, (r) => r.lagP99),
        unit: 'ms',
        note: `worst 1 s window; p50 ${med(n, (r) => r.lagP50).toFixed(1)} ms, max ${med(n, (r) => r.lagMax).toFixed(1)} ms`,
      });
    }
    const errors = perTarget.get(n)!.reduce((sum, r) => sum + r.errors, 0);
    const done = perTarget.get(n)!.reduce((sum, r) => sum + r.streamsDone, 0);
    results.push({ name: `streams errors ${n}`, value: errors, unit: 'streams', note: `of ${done} streams in ${rounds} rounds` });
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  const results = await runStreamsBench({
    quick: process.argv.includes('--quick'),
    ...(arg('--rounds') === undefined ? {} : { rounds: Number(arg('--rounds')) }),
    ...(arg('--streams') === undefined ? {} : { streams: Number(arg('--streams')) }),
    ...(arg('--only') === undefined ? {} : { only: arg('--only')! }),
    ...(arg('--cpu-prof') === undefined ? {} : { cpuProfDir: arg('--cpu-prof')! }),
    ...(arg('--priority') === undefined ? {} : { priority: Number(arg('--priority')) }),
    ...(arg('--log') === undefined ? {} : { logFile: arg('--log')! }),
  });
  printTable(results);
}
