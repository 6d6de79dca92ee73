/**
 * Where Tollgate's event loop spends its CPU, as sampled by Linux `perf` on the loop's thread alone
 * (not wall time: a sample is taken only while the thread runs), with V8's compiled JavaScript named
 * through `--perf-basic-prof`. Each sample is billed to the nearest JavaScript function on its stack,
 * so the native work a function calls (a builtin, V8's runtime, SQLite, a system call) counts as its
 * own. It prints two tables: the share per source file, and the share of samples inside V8's runtime
 * (`Runtime_*`: a property defined after a spread, an accessor defined per object, a Map shrunk and
 * grown again, a keyed store on a dictionary object …) by runtime function and the JavaScript that
 * called it. Those are slow paths taken on every request, cheap to remove once named
 * (docs/performance.md, "Slow paths the profile named").
 *
 * Tollgate as the other benches run it (built, a key with limits and a budget, the SQLite ledger,
 * one log line a request), 16 connections of unique 1 KB chat bodies; the proxy pinned to core 1,
 * the load and the fake upstream to core 0. `--no-inlining` turns TurboFan's inlining off, so a slow
 * path is billed to the function that takes it rather than to the one it was inlined into (the
 * loop's CPU then rises: read the shares, not the total).
 *
 * Needs perf (`apt-get install linux-perf`). Run: npx tsx bench/slow-paths.ts [--no-inlining] [--requests N]
 * [--build DIR] (DIR: another checkout, built with `npm run build`, to profile instead of this one).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuMicros, issueBenchKey, pin, sendRequests, startChild, tollgateEntry, uniqueBody } from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';

/** `perf script` output as samples, each its frames from the leaf up. */
function samplesOf(script: string): string[][] {
  const samples: string[][] = [];
  let frames: string[] = [];
  for (const line of script.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') {
      if (frames.length > 0) samples.push(frames);
      frames = [];
      continue;
    }
    const space = trimmed.indexOf(' ');
    frames.push(space === -1 ? '?' : trimmed.slice(space + 1));
  }
  if (frames.length > 0) samples.push(frames);
  return samples;
}

/** A JavaScript frame's name without the checkout's path (`JS:*relay dist/pipeline/relay.js:35:28`). */
function shortName(frame: string): string {
  return frame.replace(/file:\/\/\S*?\/(dist|node_modules)\//, '$1/').replace(/\S*\/node_modules\//, 'node_modules/');
}

/** The runtime call nearest the JavaScript frame at `below` (frames are leaf first), if any. */
function innermostRuntime(frames: readonly string[], below: number): string | undefined {
  for (let i = below - 1; i >= 0; i -= 1) if (frames[i]!.includes('Runtime_')) return frames[i];
  return undefined;
}

function printShares(title: string, counts: Map<string, number>, total: number, rows: number): void {
  console.log(`\n${title}`);
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    console.log(`${((100 * count) / total).toFixed(2).padStart(6)}%  ${name}`);
  }
}

function add(counts: Map<string, number>, name: string): void {
  counts.set(name, (counts.get(name) ?? 0) + 1);
}

if (spawnSync('perf', ['--version']).status !== 0) throw new Error('slow-paths needs perf (apt-get install linux-perf)');
const requestsAt = process.argv.indexOf('--requests');
const requests = requestsAt === -1 ? 10_000 : Number(process.argv[requestsAt + 1]);
const nodeArgs = ['--perf-basic-prof', ...(process.argv.includes('--no-inlining') ? ['--no-turbo-inlining'] : [])];
const scratch = mkdtempSync(join(tmpdir(), 'tollgate-slow-paths-'));
pin(process.pid, 0);
const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
try {
  pin(fake.process.pid!, 0);
  const db = join(scratch, 'tollgate.db');
  const key = issueBenchKey(db);
  const env = {
    TOLLGATE_DB: db,
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_LOG_LEVEL: 'info',
    TOLLGATE_PORT: '0',
    TOLLGATE_HOST: '127.0.0.1',
  };
  const buildAt = process.argv.indexOf('--build');
  const entry = buildAt === -1 ? tollgateEntry() : join(process.argv[buildAt + 1]!, 'dist', 'cli', 'index.js');
  const proxy = await startChild([entry, 'serve'], env, nodeArgs);
  const pid = proxy.process.pid!;
  try {
    pin(pid, 1);
    const target = {
      baseUrl: proxy.url,
      path: '/chat/completions',
      body: () => uniqueBody(false),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    };
    await sendRequests(target, 16, 8000); // JIT, pools, tokenizer
    const data = join(scratch, 'perf.data');
    const recorder = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '4999', '-g', '-t', String(pid), '-o', data], { stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 300)); // perf attached
    const before = cpuMicros(pid);
    await sendRequests(target, 16, requests);
    const loopMicros = (cpuMicros(pid) - before) / requests;
    const recorded = new Promise((resolve) => recorder.once('exit', resolve));
    recorder.kill('SIGINT');
    await recorded;
    if (!existsSync(`/tmp/perf-${pid}.map`)) throw new Error('node wrote no /tmp/perf-<pid>.map: perf could not name the JavaScript frames');
    const script = spawnSync('perf', ['script', '-i', data, '-F', 'ip,sym'], { encoding: 'utf8', maxBuffer: 1 << 30 });
    if (script.status !== 0) throw new Error(`perf script failed: ${script.stderr}`);
    const samples = samplesOf(script.stdout);
    const byFile = new Map<string, number>();
    const slowPaths = new Map<string, number>();
    let inRuntime = 0;
    for (const frames of samples) {
      const at = frames.findIndex((frame) => frame.startsWith('JS:'));
      const owner = at === -1 ? undefined : shortName(frames[at]!);
      add(
        byFile,
        owner === undefined
          ? 'native (no JavaScript on the stack)'
          : (/(dist\/\S+?\.js|node_modules\/(@[^/]+\/)?[^/]+|node:[\w/_]+)/.exec(owner)?.[1] ?? 'other JavaScript'),
      );
      const runtime = innermostRuntime(frames, at === -1 ? frames.length : at);
      if (runtime === undefined || owner === undefined) continue;
      inRuntime += 1;
      add(slowPaths, `${(/Runtime_(\w+?)(?=E[iP]|\(|\s|$)/.exec(runtime)?.[1] ?? runtime.slice(0, 40)).padEnd(32)} ${owner}`);
    }
    console.log(`${samples.length} samples over ${requests} requests; the event loop's CPU per request ${loopMicros.toFixed(0)} µs (perf attached)`);
    printShares('Share of the event loop per source file (native work billed to the JavaScript that called it):', byFile, samples.length, 30);
    printShares(
      `V8's runtime, ${((100 * inRuntime) / samples.length).toFixed(2)}% of the loop, by runtime function and caller:`,
      slowPaths,
      samples.length,
      30,
    );
  } finally {
    await proxy.stop();
    rmSync(`/tmp/perf-${pid}.map`, { force: true });
  }
} finally {
  await fake.stop();
  rmSync(scratch, { recursive: true, force: true });
}
