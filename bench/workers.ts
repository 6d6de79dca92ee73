/**
 * Every core: `tollgate serve` with 1 worker (a single process, as by default)
 * and with `--workers 2` (a primary and two workers leasing from it over IPC,
 * no Redis), against the bare node:http hop, in the same run. Same 1 KB chat
 * request as bench/proxy.ts, a key with request, token and USD limits and a
 * budget, ledger on, one info log line per request. Rounds interleave the
 * targets in a random order; medians win. CPU per request is the user+system
 * time of the server's processes (primary and workers together) over a round,
 * read from /proc, divided by the requests it served (the primary's share
 * shown apart).
 *
 * Run: npm run bench -- workers   (or npx tsx bench/workers.ts [--quick])
 *      [--only '1 worker' | '2 workers']   (one Tollgate beside the bare hop)
 *      [--cpu-prof DIR]   (the primary and every worker write a .cpuprofile under DIR/workers-N when they exit)
 *      `setsid npm run bench -- workers --priority -10` on a busy machine: as bench/streams.ts, the
 *      bench's session (load, upstream, proxies) is raised over the machine's other work (needs root).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { chatBody1k } from './proxy.js';
import {
  findFreePort,
  issueBenchKey,
  median,
  measureThroughput,
  printTable,
  REPO_ROOT,
  shuffled,
  plainJs,
  startChild,
  tollgateEntry,
  type BenchResult,
  type Child,
  type LoadTarget,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';

interface Server extends Child {
  readonly url: string;
  /** Every process serving (the primary and its workers, or the one process). */
  readonly pids: number[];
}

/** `tollgate serve --workers n`; resolves once every worker listens, with their pids. */
async function startWorkers(n: number, env: Record<string, string>, cpuProfDir?: string): Promise<Server> {
  const port = await findFreePort();
  // cluster.fork passes the primary's execArgv on: every worker writes its own profile too.
  const nodeArgs = cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', join(cpuProfDir, `workers-${n}`)];
  const child = spawn(process.execPath, [...nodeArgs, tollgateEntry(), 'serve', '--workers', String(n)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, TOLLGATE_PORT: String(port), TOLLGATE_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = n === 1 ? 'tollgate listening' : 'tollgate workers listening';
  const pids = await new Promise<number[]>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { msg?: string; pids?: number[] };
        if (parsed.msg === ready) resolve([child.pid!, ...(parsed.pids ?? [])]);
      } catch {
        // not a JSON line
      }
    });
    child.once('exit', (code) => reject(new Error(`serve --workers ${n} exited with ${String(code)} before it listened`)));
  });
  return {
    process: child,
    url: `http://127.0.0.1:${port}/v1`,
    pids,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
      }),
  };
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** User + system CPU seconds of `pids` so far (fields 14 and 15 of /proc/<pid>/stat). */
function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLOCK_TICKS;
}

export async function runWorkersBench(options: { quick?: boolean; priority?: number; only?: string; cpuProfDir?: string } = {}): Promise<BenchResult[]> {
  // Inherited by every process started below; see bench/streams.ts for why the autogroup too.
  if (options.priority !== undefined) {
    setPriority(options.priority);
    if (existsSync('/proc/self/autogroup')) writeFileSync('/proc/self/autogroup', String(options.priority));
  }
  const rounds = options.quick ? 2 : 3;
  const throughputMs = options.quick ? 1500 : 3000;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-bench-workers-'));
  const dbPath = join(scratch, 'bench.db');
  const key = issueBenchKey(dbPath);
  const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
  const bare = await startChild([plainJs('bench/bare-proxy.ts'), fake.url]);
  const env = { TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY, TOLLGATE_LOG_LEVEL: 'info', TOLLGATE_DB: dbPath };
  const servers: Record<string, Server> = {};
  const body = chatBody1k();
  const json = { 'content-type': 'application/json' };
  try {
    for (const [name, n] of [
      ['1 worker', 1],
      ['2 workers', 2],
    ] as const) {
      if (options.only === undefined || options.only === name) servers[name] = await startWorkers(n, env, options.cpuProfDir);
    }
    const targets: Record<string, { target: LoadTarget; pids: number[] }> = {
      bare: {
        target: { baseUrl: bare.url, path: '/chat/completions', body, headers: { ...json, authorization: `Bearer ${UPSTREAM_KEY}` } },
        pids: [bare.process.pid!],
      },
    };
    for (const [name, server] of Object.entries(servers)) {
      targets[name] = {
        target: { baseUrl: server.url, path: '/chat/completions', body, headers: { ...json, authorization: `Bearer ${key}` } },
        pids: server.pids,
      };
    }
    const names = Object.keys(targets);
    const series: Record<string, { rps: number[]; cpuUs: number[]; primaryUs: number[] }> = {};
    for (const c of [16, 64]) for (const name of names) series[`${name} c=${c}`] = { rps: [], cpuUs: [], primaryUs: [] };
    // Warm up: JIT, pools, encoders, and the workers' first leases.
    for (const name of names) await measureThroughput(targets[name]!.target, 16, 1000);
    for (let round = 0; round < rounds; round += 1) {
      for (const c of [16, 64]) {
        for (const name of shuffled(names)) {
          const { target, pids } = targets[name]!;
          const cpuBefore = cpuSeconds(pids);
          // With workers, the first pid is the primary: its share is the IPC's cost (README, Performance).
          const primaryBefore = cpuSeconds(pids.slice(0, 1));
          const rps = await measureThroughput(target, c, throughputMs);
          const cpu = cpuSeconds(pids) - cpuBefore;
          const primary = cpuSeconds(pids.slice(0, 1)) - primaryBefore;
          const requests = (rps * throughputMs) / 1000;
          series[`${name} c=${c}`]!.rps.push(rps);
          series[`${name} c=${c}`]!.cpuUs.push((cpu / requests) * 1e6);
          series[`${name} c=${c}`]!.primaryUs.push((primary / requests) * 1e6);
        }
      }
    }
    const results: BenchResult[] = [];
    for (const c of [16, 64]) {
      const bareRps = median(series[`bare c=${c}`]!.rps);
      const bareCpu = median(series[`bare c=${c}`]!.cpuUs);
      for (const name of names) {
        const s = series[`${name} c=${c}`]!;
        results.push({
          name: `workers c=${c} ${name === 'bare' ? 'bare hop' : `tollgate ${name}`}`,
          value: median(s.rps),
          unit: 'req/s',
          note:
            `${(median(s.rps) / bareRps).toFixed(2)}× bare; CPU ${median(s.cpuUs).toFixed(0)} µs/req (${(median(s.cpuUs) / bareCpu).toFixed(1)}× bare` +
            `${targets[name]!.pids.length > 1 ? `; primary ${median(s.primaryUs).toFixed(0)} µs/req` : ''}); median of ${rounds}`,
        });
      }
    }
    return results;
  } finally {
    await Promise.all([...Object.values(servers).map((server) => server.stop()), bare.stop(), fake.stop()]);
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  const results = await runWorkersBench({
    quick: process.argv.includes('--quick'),
    ...(arg('--priority') === undefined ? {} : { priority: Number(arg('--priority')) }),
    ...(arg('--only') === undefined ? {} : { only: arg('--only')! }),
    ...(arg('--cpu-prof') === undefined ? {} : { cpuProfDir: arg('--cpu-prof')! }),
  });
  printTable(results);
}
