/** Shared pieces of the benchmark scripts: child processes, load, statistics, tables. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { Pool } from 'undici';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { parseLimit } from '../src/domain/policy.js';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/*
 * The proxies run as deployed: plain JavaScript, no loader (the Docker image
 * runs `node dist/cli/index.js`). Under tsx, esbuild's keepNames wraps every
 * function made at run time in a helper that defines its name, which gives
 * each closure a property store of its own (~256 B) and costs a
 * defineProperty per closure made: per request, and per open stream. So
 * Tollgate is built once per bench process, and the bare hop and the probes
 * (bench/*.ts) have their types stripped into a scratch directory.
 */
let built: string | undefined;
let plainDir: string | undefined;

/** `tollgate`'s entry point, built from src/ (`tsc -p src`) on the first call. */
export function tollgateEntry(): string {
  if (built === undefined) {
    const result = spawnSync(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'src'], {
      cwd: REPO_ROOT,
      stdio: 'inherit',
    });
    if (result.status !== 0) throw new Error('tsc -p src failed: the bench runs the built proxy');
    built = join(REPO_ROOT, 'dist', 'cli', 'index.js');
  }
  return built;
}

/**
 * A bench script as a plain .mjs file (types stripped); its path. One that imports packages
 * (`besideModules`) is written under node_modules/.cache, where Node finds them.
 */
export function plainJs(script: string, options: { besideModules?: boolean } = {}): string {
  if (options.besideModules === true) {
    const dir = join(REPO_ROOT, 'node_modules', '.cache', 'tollgate-bench');
    mkdirSync(dir, { recursive: true });
    return writePlainJs(script, dir);
  }
  if (plainDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-js-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    plainDir = dir;
  }
  return writePlainJs(script, plainDir);
}

function writePlainJs(script: string, dir: string): string {
  const source = readFileSync(join(REPO_ROOT, script), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  const out = join(dir, basename(script).replace(/\.ts$/, '.mjs'));
  writeFileSync(out, outputText);
  return out;
}

/** One measured number, as every bench module reports it. */
export interface BenchResult {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly note?: string;
}

export interface Child {
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `tsx <script> …args` (or, for a `.mjs` script from {@link plainJs},
 * plain node) and waits for the first stdout line that is a JSON object with a
 * `url` (our scripts print one) or, for tollgate itself, its "tollgate
 * listening" log line.
 */
export async function startChild(
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: readonly string[] = [],
  /** A program node runs under, with its arguments (e.g. valgrind, bench/instructions.ts). */
  wrapper: readonly string[] = [],
): Promise<Child & { url: string }> {
  const loader = args[0]?.endsWith('.mjs') || args[0]?.endsWith('.js') ? [] : ['--import', 'tsx'];
  const command = [...wrapper, process.execPath, ...nodeArgs, ...loader, ...args];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { url?: string; msg?: string };
        if (parsed.url !== undefined) resolve(parsed.msg === 'tollgate listening' ? `${parsed.url}/v1` : parsed.url);
      } catch {
        // not a JSON line
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${String(code)} before it listened`)));
  });
  child.stdout!.resume();
  return {
    process: child,
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

/** A port nothing listens on right now (bound and released). */
export async function findFreePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the built `tollgate serve` on a free port with `env`, whatever its
 * log level, and resolves once /healthz answers.
 */
export async function startTollgate(
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
  /** Bench scripts loaded before the server, e.g. 'bench/stall-probe.ts' (as {@link plainJs}). */
  imports: readonly string[] = [],
): Promise<Child & { url: string }> {
  const port = await findFreePort();
  const preload = imports.flatMap((script) => ['--import', plainJs(script)]);
  const child = spawn(process.execPath, [...nodeArgs, ...preload, tollgateEntry(), 'serve'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, TOLLGATE_PORT: String(port), TOLLGATE_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout!.resume();
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`tollgate serve exited with ${child.exitCode}`);
    const up = await fetch(`${origin}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error('tollgate serve did not answer /healthz within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    process: child,
    url: `${origin}/v1`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

/** A key as deployed: request, token and USD limits and a budget, far above what the bench spends. */
export function issueBenchKey(dbPath: string): string {
  const database = openDatabase(dbPath);
  try {
    return new KeyStore(database).createKey({
      name: 'bench',
      tenant: 'bench-tenant',
      policy: {
        limits: [parseLimit('requests:10000000/min'), parseLimit('tokens:10000000000/min'), parseLimit('usd:1000000/min')],
        budget: { microUsd: 1_000_000_000_000, period: 'month' },
      },
    }).key;
  } finally {
    database.close();
  }
}

/** Pins every thread of `pid` (and the threads it starts later) to `core`. */
export function pin(pid: number, core: number): void {
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`taskset could not pin ${pid} to core ${core}`);
}

/** CPU time (user + system) the main thread (the event loop) of `pid` has used, in µs, from /proc. */
export function cpuMicros(pid: number): number {
  return statCpuMicros(`/proc/${pid}/task/${pid}/stat`);
}

/** User + system CPU time of the whole process `pid` (every thread), in µs, from /proc. */
export function processCpuMicros(pid: number): number {
  return statCpuMicros(`/proc/${pid}/stat`);
}

/** utime + stime of a /proc stat file, in µs. */
function statCpuMicros(path: string): number {
  const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / 100) * 1e6; // clock ticks at 100 Hz
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export interface LoadTarget {
  readonly baseUrl: string;
  readonly path: string;
  /** The same body every time, or a new one per request (e.g. unique bodies, so no cache helps). */
  readonly body: string | (() => string);
  readonly headers: Record<string, string>;
}

export function bodyOf(target: LoadTarget): string {
  return typeof target.body === 'string' ? target.body : target.body();
}

/** Sequential requests, one at a time: per-request latency in ms. */
export async function measureLatency(target: LoadTarget, count: number): Promise<number[]> {
  const url = new URL(target.baseUrl);
  const pool = new Pool(url.origin, { connections: 1 });
  const path = url.pathname.replace(/\/+$/, '') + target.path;
  const samples: number[] = [];
  try {
    for (let i = 0; i < count; i += 1) {
      const start = process.hrtime.bigint();
      const res = await pool.request({ method: 'POST', path, headers: target.headers, body: bodyOf(target) });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`${target.baseUrl} answered ${res.statusCode}`);
      samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  } finally {
    await pool.close();
  }
  return samples;
}

/** `concurrency` workers for `durationMs`: completed requests per second. */
export async function measureThroughput(target: LoadTarget, concurrency: number, durationMs: number): Promise<number> {
  const started = performance.now();
  const stopAt = started + durationMs;
  const done = await sendWhile(target, concurrency, () => performance.now() < stopAt);
  return (done / (performance.now() - started)) * 1000;
}

/** Exactly `count` requests over `concurrency` connections. */
export async function sendRequests(target: LoadTarget, concurrency: number, count: number): Promise<void> {
  let left = count;
  await sendWhile(target, concurrency, () => left-- > 0);
}

/** `concurrency` workers, each sending its next request while `more()` says so; the requests completed. */
async function sendWhile(target: LoadTarget, concurrency: number, more: () => boolean): Promise<number> {
  const url = new URL(target.baseUrl);
  const pool = new Pool(url.origin, { connections: concurrency });
  const path = url.pathname.replace(/\/+$/, '') + target.path;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (more()) {
      const res = await pool.request({ method: 'POST', path, headers: target.headers, body: bodyOf(target) });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`${target.baseUrl} answered ${res.statusCode}`);
      done += 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await pool.close();
  }
  return done;
}

/** Fisher–Yates on a copy, so rounds interleave targets in a different order each time. */
export function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** Prints results as an aligned table. */
export function printTable(results: readonly BenchResult[]): void {
  const rows = results.map((r) => [r.name, formatValue(r.value), r.unit, r.note ?? '']);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]!.length), ['benchmark', 'value', 'unit', 'note'][i]!.length));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 1 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(['benchmark', 'value', 'unit', 'note'])}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
}

function formatValue(value: number): string {
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toPrecision(3);
}

const FILLER = 'The quick brown fox jumps over the lazy dog near the riverbank at dawn. ';
let serial = 0;

/** The benches' 1 KB prompt: its first words a serial number, then `filler` (English prose unless given) to about 1 KB. */
export function uniquePrompt(serialNumber: number, filler = FILLER): string {
  return `Request ${serialNumber} of the bench. ${filler.repeat(13).trim()}`;
}

/** A 1 KB chat body that no earlier request shares a prefix with (its first words are a serial number). */
export function uniqueBody(stream: boolean, maxTokens = 64): string {
  serial += 1;
  return JSON.stringify({
    model: 'gpt-4o-mini',
    max_tokens: maxTokens,
    ...(stream ? { stream: true } : {}),
    messages: [{ role: 'user', content: uniquePrompt(serial) }],
  });
}

export interface FixedRateResult {
  readonly latencies: number[];
  readonly errors: number;
  /** How late each request left the load generator (ms after it was due): its own delays, in every latency. */
  readonly sendLate: number[];
}

/**
 * `rps` requests a second for `durationMs`, each sent when due whatever the
 * others are doing (open loop); latency is measured from when it was due.
 */
export async function fixedRate(target: LoadTarget, rps: number, durationMs: number): Promise<FixedRateResult> {
  const url = new URL(target.baseUrl);
  const pool = new Pool(url.origin, { connections: 256, pipelining: 1 });
  const path = url.pathname.replace(/\/+$/, '') + target.path;
  const total = Math.floor((durationMs / 1000) * rps);
  const latencies: number[] = [];
  const sendLate: number[] = [];
  let errors = 0;
  let outstanding = 0;
  let allSent = false;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const start = performance.now();
  for (let i = 0; i < total; i += 1) {
    const due = start + (i * 1000) / rps;
    const wait = due - performance.now();
    if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
    sendLate.push(Math.max(0, performance.now() - due));
    outstanding += 1;
    pool
      .request({ method: 'POST', path, headers: target.headers, body: bodyOf(target) })
      .then(async (res) => {
        await res.body.arrayBuffer();
        if (res.statusCode === 200) latencies.push(performance.now() - due);
        else errors += 1;
      })
      .catch(() => {
        errors += 1;
      })
      .finally(() => {
        outstanding -= 1;
        if (allSent && outstanding === 0) finish();
      });
  }
  allSent = true;
  if (outstanding === 0) finish();
  await finished;
  await pool.close();
  return { latencies, errors, sendLate };
}

/** What bench/stall-probe.ts writes as the process exits: event-loop stalls over 10 ms and GC pauses. */
export interface StallReport {
  readonly ticks: number;
  /** `hrUs`: start on the monotonic clock; `runMs` / `waitMs`: how long the loop's thread ran, and waited for the core, over the stall's tick (Linux). */
  readonly stalls: { at: number; ms: number; hrUs: number; runMs?: number; waitMs?: number }[];
  readonly gcs: { at: number; ms: number; kind: string }[];
}

/** The bytes the event loop's heap of `pid` has allocated so far, as bench/alloc-probe.ts (loaded into it) counts them in `file`. */
export async function allocatedBytes(pid: number, file: string): Promise<number> {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { bytes: number }).bytes;
    } catch {
      // not written yet (or half written)
    }
    if (Date.now() > deadline) throw new Error(`process ${pid} did not report its allocations (bench/alloc-probe.ts)`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Now on the machine's monotonic clock, µs (the probe's `hrUs`). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** The probe's report in `file`, with only the stalls that started within [fromUs, toUs]. */
export function readStalls(file: string, fromUs: number, toUs: number): StallReport {
  const report = JSON.parse(readFileSync(file, 'utf8')) as StallReport;
  return { ...report, stalls: report.stalls.filter((stall) => stall.hrUs >= fromUs && stall.hrUs <= toUs) };
}

/** The share of the stalls' time the loop was ready to run but another thread had the core; undefined where the kernel did not say. */
export function waitShareOf(stalls: StallReport['stalls']): number | undefined {
  const split = stalls.filter((stall) => stall.runMs !== undefined && stall.waitMs !== undefined);
  const splitMs = split.reduce((sum, stall) => sum + stall.runMs! + stall.waitMs!, 0);
  return splitMs > 0 ? split.reduce((sum, stall) => sum + stall.waitMs!, 0) / splitMs : undefined;
}
