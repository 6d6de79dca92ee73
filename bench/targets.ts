/**
 * Issue 15's table, measured as the issue defines it: the proxy alone on core
 * 1, the load generator and the fake upstream on core 0; a bare `node:http`
 * hop against Tollgate as deployed (a key with request, token and USD limits
 * and a budget, ledger on SQLite, one log line per request); 1 KB chat bodies,
 * a different one on every request (no estimate cache helps); medians of
 * interleaved rounds, so drift hits both alike.
 *
 * - req/s at 16 and 64 connections, and CPU per request: user + system time
 *   of the proxy's whole process (every thread) over the requests it served;
 * - one client at a time (c=1): p50 / p99 / p99.9, each as measured and as
 *   added over going direct to the fake upstream, the figure the other gateways'
 *   published comparisons lead with;
 * - p99 latency at a fixed 500 req/s, open loop: each request's latency runs
 *   from when it was due, so a slow proxy cannot hide behind a slowed load;
 * - SSE streams/s at 16 connections (the same body with `stream: true`);
 * - with `--sse-streams` streams open at once (default 64) from a slow upstream
 *   that stamps its chunks (bench/sse-gap.ts, which starts its own upstream,
 *   bare hop and Tollgate): time to first byte, the gap between a stream's
 *   chunks and each chunk's relay delay, p50 / p99 directly, through the bare
 *   hop and through Tollgate, and what each adds (target: Tollgate's added
 *   chunk gap at p99 ≤ 1 ms over the bare hop's);
 * - a stall run: half of Tollgate's measured maximum for `--stall-minutes`
 *   (default 5) through each proxy, both with bench/stall-probe.ts loaded, in
 *   halves taking turns (so the stall run takes twice that), reporting for
 *   each every event-loop stall over 10 ms, the worst, whether a GC pause
 *   overlapped it and how much of the stalls' time its loop waited for the
 *   core. The bare hop's are the floor: what this machine does to any Node
 *   process at that rate, however little it does per request.
 *
 * Run: npm run bench -- targets [--quick] [--stall-minutes N]
 *   or npx tsx bench/targets.ts [--quick] [--stall-minutes N] [--sse-streams N] [--only sse-gap]
 *        [--tollgate-node-args "--v8-pool-size=1"]
 *   (`--only sse-gap`: that section alone, a minute or so; `--tollgate-node-args`: Node flags for
 *   Tollgate alone, such as the V8 flags docs/performance.md tried)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  fixedRate,
  issueBenchKey,
  median,
  measureLatency,
  measureThroughput,
  monotonicUs,
  percentile,
  pin,
  plainJs,
  printTable,
  processCpuMicros,
  readStalls,
  shuffled,
  startChild,
  startTollgate,
  type BenchResult,
  type LoadTarget,
  type StallReport,
  uniqueBody,
  waitShareOf,
} from './support.js';
import { startSseGap } from './sse-gap.js';

const UPSTREAM_KEY = 'sk-bench-upstream';

/** The worst of a report's stalls (those of the stall run, not start-up or the saturating rounds) and what overlapped it. */
function worstStall(report: StallReport): { ms: number; cause: string; count: number; waitShare: number | undefined } {
  const waitShare = waitShareOf(report.stalls);
  let worst: StallReport['stalls'][number] | undefined;
  for (const stall of report.stalls) if (worst === undefined || stall.ms > worst.ms) worst = stall;
  if (worst === undefined) return { ms: 0, cause: 'no stall over 10 ms', count: 0, waitShare };
  const overlapping = report.gcs.filter((gc) => gc.at < worst.at + worst.ms && gc.at + gc.ms > worst.at - 2);
  const gcMs = overlapping.reduce((sum, gc) => sum + gc.ms, 0);
  const cause =
    overlapping.length === 0
      ? 'no GC pause overlapped it (JavaScript or a synchronous call ran that long)'
      : `GC: ${overlapping.map((gc) => `${gc.kind} ${gc.ms.toFixed(1)} ms`).join(', ')} (${gcMs.toFixed(1)} of ${worst.ms.toFixed(1)} ms)`;
  const waited = worst.waitMs === undefined ? '' : `; the loop waited ${worst.waitMs.toFixed(1)} ms of it for the core`;
  return { ms: worst.ms, cause: cause + waited, count: report.stalls.length, waitShare };
}

/** c=1: each percentile is the median over rounds of that round's percentile; "added" subtracts direct's. */
function serialResults(serial: Record<'direct' | 'bare' | 'tollgate', number[][]>): BenchResult[] {
  const at = (name: keyof typeof serial, p: number) => median(serial[name].map((round) => percentile(round, p)));
  const results: BenchResult[] = [];
  for (const p of [50, 99, 99.9]) {
    for (const name of ['direct', 'bare', 'tollgate'] as const) {
      const note = name === 'tollgate' ? `${(at('tollgate', p) / at('bare', p)).toFixed(2)}× the bare hop` : `median of ${serial[name].length} rounds`;
      results.push({ name: `c=1 p${p}, ${name}`, value: at(name, p), unit: 'ms', note });
    }
    const addedBare = at('bare', p) - at('direct', p);
    const addedTollgate = at('tollgate', p) - at('direct', p);
    results.push({ name: `c=1 p${p} added over direct, bare hop`, value: addedBare, unit: 'ms', note: '' });
    results.push({
      name: `c=1 p${p} added over direct, tollgate`,
      value: addedTollgate,
      unit: 'ms',
      // The load side's own tail is in both; a bare hop that measured below direct added nothing to compare with.
      note: addedBare > 0 ? `${(addedTollgate / addedBare).toFixed(2)}× the bare hop's` : 'the bare hop added nothing measurable in this run',
    });
  }
  return results;
}

export async function runTargetsBench(options: {
  quick: boolean;
  stallMinutes?: number;
  /** Concurrent streams in the SSE gap section (default 64). */
  sseStreams?: number;
  /** 'sse-gap': that section alone (the processes of the others still start, idle, as in a whole run). */
  only?: string;
  /** Node flags for Tollgate alone (`--tollgate-node-args`). */
  nodeArgs?: readonly string[];
}): Promise<BenchResult[]> {
  if (options.only !== undefined && options.only !== 'sse-gap') throw new Error(`--only takes sse-gap, not "${options.only}"`);
  const all = options.only === undefined;
  const rounds = 3;
  const throughputMs = options.quick ? 1500 : 3000;
  const fixedMs = options.quick ? 4000 : 10_000;
  // p99.9 needs a few thousand samples per round to mean anything.
  const serialCount = options.quick ? 600 : 3000;
  const stallMs = all ? (options.stallMinutes ?? (options.quick ? 0.5 : 5)) * 60_000 : 0;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-targets-'));
  pin(process.pid, 0);
  const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
  pin(fake.process.pid!, 0);
  const stallFiles = { bare: join(scratch, 'bare-stalls.json'), tollgate: join(scratch, 'stalls.json') };
  const stallProbe = ['--import', plainJs('bench/stall-probe.ts')];
  const bare = await startChild([plainJs('bench/bare-proxy.ts'), fake.url], { TOLLGATE_BENCH_STALL_FILE: stallFiles.bare }, stallProbe);
  pin(bare.process.pid!, 1);
  const dbPath = join(scratch, 'bench.db');
  const key = issueBenchKey(dbPath);
  const tollgate = await startTollgate(
    {
      TOLLGATE_DB: dbPath,
      TOLLGATE_UPSTREAM_URL: fake.url,
      TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
      TOLLGATE_LOG_LEVEL: 'info',
      TOLLGATE_BENCH_STALL_FILE: stallFiles.tollgate,
    },
    options.nodeArgs ?? [],
    ['bench/stall-probe.ts'],
  );
  pin(tollgate.process.pid!, 1);
  // Its own upstream, bare hop and Tollgate (bench/sse-gap.ts says why); 1 KB bodies as the rest. Tollgate ends a stream
  // at max_tokens, and 50 stamped chunks count ~200 tokens (with 64 it cut them after 16): room for all.
  const sseGap = await startSseGap({
    streams: options.sseStreams ?? 64,
    quick: options.quick,
    body: () => uniqueBody(true, 512),
    nodeArgs: options.nodeArgs ?? [],
  }).catch(async (error: unknown) => {
    await Promise.all([tollgate.stop(), bare.stop(), fake.stop()]);
    throw error;
  });
  const json = { 'content-type': 'application/json' };
  const servers = {
    direct: { url: fake.url, pid: fake.process.pid!, headers: { ...json, authorization: `Bearer ${UPSTREAM_KEY}` } },
    bare: { url: bare.url, pid: bare.process.pid!, headers: { ...json, authorization: `Bearer ${UPSTREAM_KEY}` } },
    tollgate: { url: tollgate.url, pid: tollgate.process.pid!, headers: { ...json, authorization: `Bearer ${key}` } },
  };
  type Server = keyof typeof servers;
  type Name = Exclude<Server, 'direct'>;
  const names: Name[] = ['bare', 'tollgate'];
  const serial = { direct: [] as number[][], bare: [] as number[][], tollgate: [] as number[][] };
  const target = (name: Server, stream: boolean): LoadTarget => ({
    baseUrl: servers[name].url,
    path: '/chat/completions',
    body: () => uniqueBody(stream),
    headers: servers[name].headers,
  });
  const series = () => ({ bare: [] as number[], tollgate: [] as number[] });
  const rps16 = series();
  const rps64 = series();
  const cpu16 = series();
  const cpu64 = series();
  const p99 = series();
  const sse16 = series();
  let fixedErrors = 0;
  let stall: Record<Name, ReturnType<typeof worstStall>> | undefined;
  let stallRate = 0;
  const stallLatencies = { bare: [] as number[], tollgate: [] as number[] };
  const stallErrors = { bare: 0, tollgate: 0 };
  let loadSide: { sendLateP99: number; loopP99: number; loopMax: number } | undefined;
  /** Each proxy's turns in the stall run (monotonic µs): only its stalls within them count. */
  const stallWindows = { bare: [] as { fromUs: number; toUs: number }[], tollgate: [] as { fromUs: number; toUs: number }[] };
  try {
    if (all) for (const name of names) await measureThroughput(target(name, false), 16, 1000); // JIT, pools, tokenizer
    await sseGap.warmUp();
    for (let round = 0; round < rounds; round += 1) {
      await sseGap.round();
      if (!all) continue;
      for (const name of shuffled(['direct', ...names] as Server[])) serial[name].push(await measureLatency(target(name, false), serialCount));
      for (const [connections, rps, cpu] of [
        [16, rps16, cpu16],
        [64, rps64, cpu64],
      ] as const) {
        for (const name of shuffled(names)) {
          const before = processCpuMicros(servers[name].pid);
          const rate = await measureThroughput(target(name, false), connections, throughputMs);
          rps[name].push(rate);
          cpu[name].push((processCpuMicros(servers[name].pid) - before) / ((rate * throughputMs) / 1000));
        }
      }
      for (const name of shuffled(names)) sse16[name].push(await measureThroughput(target(name, true), 16, throughputMs));
      for (const name of shuffled(names)) {
        const result = await fixedRate(target(name, false), 500, fixedMs);
        fixedErrors += result.errors;
        p99[name].push(percentile(result.latencies, 99));
      }
    }
    // Idle as they are, they would still share the stall run's core.
    await sseGap.stop();
    if (stallMs > 0) {
      stallRate = Math.round(median(rps16.tollgate) / 2);
      process.stderr.write(`targets: stall run, ${stallRate} req/s for ${stallMs / 60_000} min through each proxy\n`);
      const ownLoop = monitorEventLoopDelay({ resolution: 2 });
      ownLoop.enable();
      const sendLate: number[] = [];
      // Two turns each, in a random order: drift over the run hits both alike.
      for (const name of [...shuffled(names), ...shuffled(names)]) {
        const fromUs = monotonicUs();
        const result = await fixedRate(target(name, false), stallRate, stallMs / 2);
        stallWindows[name].push({ fromUs, toUs: monotonicUs() });
        stallErrors[name] += result.errors;
        stallLatencies[name].push(...result.latencies);
        sendLate.push(...result.sendLate);
      }
      ownLoop.disable();
      loadSide = { sendLateP99: percentile(sendLate, 99), loopP99: ownLoop.percentile(99) / 1e6, loopMax: ownLoop.max / 1e6 };
    }
  } finally {
    await Promise.all([tollgate.stop(), bare.stop(), fake.stop(), sseGap.stop()]);
  }
  if (stallMs > 0) {
    const stallsOf = (name: Name): StallReport => {
      const turns = stallWindows[name].map((turn) => readStalls(stallFiles[name], turn.fromUs, turn.toUs));
      return { ticks: turns[0]!.ticks, stalls: turns.flatMap((turn) => turn.stalls), gcs: turns[0]!.gcs };
    };
    stall = { bare: worstStall(stallsOf('bare')), tollgate: worstStall(stallsOf('tollgate')) };
  }
  rmSync(scratch, { recursive: true, force: true });

  if (!all) return sseGap.results();
  const m = (values: readonly number[]) => median(values);
  const ratio = (s: { bare: number[]; tollgate: number[] }) => m(s.tollgate) / m(s.bare);
  const results: BenchResult[] = [];
  for (const [label, s, unit] of [
    ['req/s, 16 connections', rps16, 'req/s'],
    ['req/s, 64 connections', rps64, 'req/s'],
    ['CPU per request, 16 connections', cpu16, 'µs'],
    ['CPU per request, 64 connections', cpu64, 'µs'],
    ['p99 at 500 req/s', p99, 'ms'],
    ['SSE streams/s, 16 connections', sse16, 'req/s'],
  ] as const) {
    results.push({ name: `${label}, bare hop`, value: m(s.bare), unit, note: `median of ${rounds} rounds` });
    results.push({ name: `${label}, tollgate`, value: m(s.tollgate), unit, note: `${ratio(s).toFixed(2)}× the bare hop` });
  }
  results.push(...serialResults(serial), ...sseGap.results());
  results.push({ name: 'fixed-rate errors', value: fixedErrors, unit: 'requests', note: 'non-200 or failed at 500 req/s' });
  if (stall !== undefined) {
    results.push({
      name: 'stall run rate',
      value: stallRate,
      unit: 'req/s',
      note: `half of tollgate's 16-connection median, ${stallMs / 60_000} min through each proxy`,
    });
    for (const name of names) {
      const label = name === 'bare' ? 'bare hop' : name;
      const { count, ms, cause, waitShare } = stall[name];
      results.push({ name: `stall run p99, ${label}`, value: percentile(stallLatencies[name], 99), unit: 'ms', note: `${stallErrors[name]} errors` });
      results.push({
        name: `event-loop stalls over 10 ms, ${label}`,
        value: count,
        unit: 'stalls',
        note: name === 'bare' ? 'the floor: what the machine does to a Node process that does almost nothing per request' : 'during its turns of the stall run',
      });
      results.push({ name: `worst event-loop stall, ${label}`, value: ms, unit: 'ms', note: cause });
      if (waitShare !== undefined) {
        results.push({
          name: `stalls: loop waiting for the core, ${label}`,
          value: waitShare * 100,
          unit: '%',
          note: "of the stalls' time, the loop was ready but another thread (the process's own helpers, or another process) had the core",
        });
      }
    }
  }
  if (loadSide !== undefined) {
    // Open-loop latency counts from when a request was due, so the load generator's own delays are in the stall run's p99 too.
    results.push({
      name: 'stall run: requests sent late, p99',
      value: loadSide.sendLateP99,
      unit: 'ms',
      note: "the load generator's own delay, in every latency",
    });
    results.push({
      name: "stall run: load generator's event-loop delay p99 / max",
      value: loadSide.loopP99,
      unit: 'ms',
      note: `max ${loadSide.loopMax.toFixed(1)} ms`,
    });
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  const [stallMinutes, sseStreams, only, nodeArgs] = [arg('--stall-minutes'), arg('--sse-streams'), arg('--only'), arg('--tollgate-node-args')];
  printTable(
    await runTargetsBench({
      quick: process.argv.includes('--quick'),
      ...(stallMinutes === undefined ? {} : { stallMinutes: Number(stallMinutes) }),
      ...(sseStreams === undefined ? {} : { sseStreams: Number(sseStreams) }),
      ...(only === undefined ? {} : { only }),
      ...(nodeArgs === undefined ? {} : { nodeArgs: nodeArgs.split(/\s+/).filter((flag) => flag !== '') }),
    }),
  );
}
