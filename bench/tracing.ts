/**
 * What tracing costs: CPU per request of the event loop (user + system, from /proc) and c=1
 * latency, for the same built proxy with tracing off (no endpoint) and on (every request
 * sampled, spans exported to a local OTLP sink that discards them), and, with `--before`,
 * another checkout's build (today's main, without tracing) to hold "off" against. Each proxy is
 * pinned alone to core 1; the load, the fake upstream and the sink share core 0; rounds
 * interleave the targets in random order and medians of the rounds are reported
 * (/work/shared/BENCH-NOTES.md: ratios measured in one run carry, absolute figures do not).
 *
 * Run: npx tsx bench/tracing.ts [--before /path/to/other/checkout] [--rounds N] [--quick]
 * (another checkout must have been built: `npm run build` there.)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { chatBody1k } from './proxy.js';
import {
  cpuMicros,
  findFreePort,
  issueBenchKey,
  measureLatency,
  measureThroughput,
  median,
  printTable,
  shuffled,
  startChild,
  tollgateEntry,
  type BenchResult,
  type LoadTarget,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';

interface Served {
  readonly url: string;
  readonly pid: number;
  stop(): void;
}

async function serve(entry: string, cwd: string, env: Record<string, string>): Promise<Served> {
  const port = await findFreePort();
  const child = spawn('taskset', ['-c', '1', process.execPath, entry, 'serve'], {
    cwd,
    env: { ...process.env, ...env, TOLLGATE_PORT: String(port), TOLLGATE_HOST: '127.0.0.1', TOLLGATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('tollgate listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`tollgate (${cwd}) exited with ${String(code)}`)));
  });
  child.stdout!.resume();
  return { url: `http://127.0.0.1:${port}/v1`, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

export async function runTracingBench(options: { quick?: boolean; rounds?: number; before?: string } = {}): Promise<BenchResult[]> {
  const rounds = options.rounds ?? (options.quick ? 3 : 9);
  const throughputMs = options.quick ? 1000 : 2000;
  spawn('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-tracing-bench-'));
  const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
  const sink = await startChild(['bench/otlp-sink.ts']);
  const entry = tollgateEntry();
  const builds: Record<string, { entry: string; cwd: string; env: Record<string, string> }> = {
    off: { entry, cwd: process.cwd(), env: {} },
    on: { entry, cwd: process.cwd(), env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on' } },
  };
  if (options.before !== undefined) {
    const before = join(options.before, 'dist', 'cli', 'index.js');
    if (!existsSync(before)) throw new Error(`${options.before} has no dist/cli/index.js: run \`npm run build\` there first`);
    builds.before = { entry: before, cwd: options.before, env: {} };
  }
  const servers: Record<string, Served> = {};
  const targets: Record<string, LoadTarget> = {};
  const names = Object.keys(builds);
  const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const latency: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  try {
    for (const name of names) {
      const build = builds[name]!;
      const dbPath = join(scratch, `${name}.db`);
      const key = issueBenchKey(dbPath);
      servers[name] = await serve(build.entry, build.cwd, {
        ...build.env,
        TOLLGATE_DB: dbPath,
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
      });
      targets[name] = {
        baseUrl: servers[name]!.url,
        path: '/chat/completions',
        body: chatBody1k(),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      };
    }
    for (const name of names) await measureLatency(targets[name]!, 100); // warm up JIT, pools, encoders
    for (let round = 0; round < rounds; round += 1) {
      for (const name of shuffled(names)) latency[name]!.push(median(await measureLatency(targets[name]!, options.quick ? 100 : 300)));
      for (const name of shuffled(names)) {
        const before = cpuMicros(servers[name]!.pid);
        const rps = await measureThroughput(targets[name]!, 16, throughputMs);
        cpu[name]!.push((cpuMicros(servers[name]!.pid) - before) / ((rps * throughputMs) / 1000));
      }
    }
  } finally {
    for (const server of Object.values(servers)) server.stop();
    await Promise.all([fake.stop(), sink.stop()]);
    rmSync(scratch, { recursive: true, force: true });
  }
  const results: BenchResult[] = [];
  for (const name of names) {
    results.push({ name: `tracing ${name}: CPU per request c=16`, value: median(cpu[name]!), unit: 'µs', note: `median of ${rounds} rounds; the event loop` });
    results.push({ name: `tracing ${name}: latency c=1`, value: median(latency[name]!) * 1000, unit: 'µs', note: 'median of round medians' });
  }
  results.push({ name: 'tracing on ÷ off: CPU per request', value: median(cpu.on!) / median(cpu.off!), unit: '×', note: 'what exporting every request costs' });
  if (options.before !== undefined) {
    results.push({
      name: 'tracing off ÷ before: CPU per request',
      value: median(cpu.off!) / median(cpu.before!),
      unit: '×',
      note: '1 = tracing off adds nothing',
    });
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = (flag: string) => (process.argv.includes(flag) ? process.argv[process.argv.indexOf(flag) + 1] : undefined);
  const rounds = at('--rounds');
  const before = at('--before');
  printTable(
    await runTracingBench({
      quick: process.argv.includes('--quick'),
      ...(rounds === undefined ? {} : { rounds: Number(rounds) }),
      ...(before === undefined ? {} : { before }),
    }),
  );
}
