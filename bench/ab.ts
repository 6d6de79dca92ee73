/**
 * Two builds of Tollgate in one run: the working tree and another checkout
 * (a git worktree of an older commit), the same key and load, rounds
 * interleaved in random order so machine drift hits both alike. For checking
 * that a change made the proxy no slower.
 *
 * Both run as deployed, built (`node dist/cli/index.js serve`): this working
 * tree is built first; another checkout must have been built (`npm run build`
 * there). Under tsx, esbuild's keepNames wraps every closure made at run time
 * (support.ts), which charges a build per closure it makes per request.
 *
 * Run: npx tsx bench/ab.ts /path/to/other/checkout [--this /path/to/checkout] [--quick] [--unique]
 * (`--this` defaults to this working tree; `--unique` sends a different 1 KB body each time).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chatBody1k } from './proxy.js';
import {
  cpuMicros,
  findFreePort,
  issueBenchKey,
  measureLatency,
  measureThroughput,
  median,
  printTable,
  REPO_ROOT,
  shuffled,
  startChild,
  tollgateEntry,
  uniqueBody,
  type BenchResult,
  type LoadTarget,
} from './support.js';

const other = process.argv[2];
if (other === undefined || other.startsWith('--')) throw new Error('usage: npx tsx bench/ab.ts /path/to/other/checkout [--quick] [--unique]');
const quick = process.argv.includes('--quick');
const unique = process.argv.includes('--unique');
const thisIndex = process.argv.indexOf('--this');
const thisRoot = thisIndex === -1 ? REPO_ROOT : process.argv[thisIndex + 1]!;
const UPSTREAM_KEY = 'sk-bench-upstream';

/** The built entry point of the checkout at `root` (this working tree's is built now). */
function builtEntry(root: string): string {
  if (join(root, '.') === join(REPO_ROOT, '.')) return tollgateEntry();
  const entry = join(root, 'dist', 'cli', 'index.js');
  if (!existsSync(entry)) throw new Error(`${root} has no dist/cli/index.js: run \`npm run build\` there first`);
  return entry;
}

async function serve(root: string, env: Record<string, string>): Promise<{ url: string; pid: number; stop: () => void }> {
  const port = await findFreePort();
  // The proxies alone on core 1; this process (the load) and the fake upstream on core 0.
  const child = spawn('taskset', ['-c', '1', process.execPath, builtEntry(root), 'serve'], {
    cwd: root,
    env: { ...process.env, ...env, TOLLGATE_PORT: String(port), TOLLGATE_HOST: '127.0.0.1', TOLLGATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('tollgate listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`tollgate in ${root} exited with ${String(code)}`)));
  });
  child.stdout!.resume();
  return { url: `http://127.0.0.1:${port}/v1`, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

spawn('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
const scratch = mkdtempSync(join(tmpdir(), 'tollgate-ab-'));
const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
const servers: Record<string, { url: string; pid: number; stop: () => void }> = {};
const targets: Record<string, LoadTarget> = {};
for (const [name, root] of [
  ['this', thisRoot],
  ['other', other],
] as const) {
  const dbPath = join(scratch, `${name}.db`);
  const key = issueBenchKey(dbPath);
  servers[name] = await serve(root, { TOLLGATE_DB: dbPath, TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY });
  targets[name] = {
    baseUrl: servers[name]!.url,
    path: '/chat/completions',
    // `--unique`: a different body each time, so no estimate cache helps (what the targets send).
    body: unique ? () => uniqueBody(false) : chatBody1k(),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
  };
}
const names = Object.keys(targets);
const latency: Record<string, number[]> = { this: [], other: [] };
const rps16: Record<string, number[]> = { this: [], other: [] };
const cpu: Record<string, number[]> = { this: [], other: [] };
try {
  for (const name of names) await measureLatency(targets[name]!, 100);
  for (let round = 0; round < (quick ? 4 : 10); round += 1) {
    for (const name of shuffled(names)) latency[name]!.push(median(await measureLatency(targets[name]!, quick ? 150 : 300)));
    for (const name of shuffled(names)) {
      const ms = quick ? 1000 : 2000;
      const before = cpuMicros(servers[name]!.pid);
      const rps = await measureThroughput(targets[name]!, 16, ms);
      rps16[name]!.push(rps);
      cpu[name]!.push((cpuMicros(servers[name]!.pid) - before) / ((rps * ms) / 1000));
    }
  }
} finally {
  for (const server of Object.values(servers)) server.stop();
  await fake.stop();
  rmSync(scratch, { recursive: true, force: true });
}
const results: BenchResult[] = [];
for (const name of names) {
  results.push({ name: `latency c=1 ${name}`, value: median(latency[name]!) * 1000, unit: 'µs', note: `median of round medians` });
  results.push({ name: `throughput c=16 ${name}`, value: median(rps16[name]!), unit: 'req/s', note: '' });
  results.push({ name: `CPU per request c=16 ${name}`, value: median(cpu[name]!), unit: 'µs', note: 'the event loop only (workers and checkpoints apart)' });
}
results.push({ name: 'latency this ÷ other', value: median(latency.this!) / median(latency.other!), unit: '×', note: 'below 1: this is faster' });
results.push({ name: 'CPU per request this ÷ other', value: median(cpu.this!) / median(cpu.other!), unit: '×', note: 'below 1: this is cheaper' });
results.push({ name: 'throughput this ÷ other', value: median(rps16.this!) / median(rps16.other!), unit: '×', note: 'above 1: this is faster' });
printTable(results);
