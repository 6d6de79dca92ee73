/**
 * Instructions per request, counted by valgrind's callgrind: the bare node:http hop, the floor's
 * `both` hop (bench/floor-hop.ts: Tollgate's estimate and ledger writer on the least stack) and
 * Tollgate as deployed, each started under callgrind with counting off, warmed up, then counted
 * over a fixed number of requests (16 connections, unique 1 KB chat bodies). Unlike CPU time, the
 * count does not move with the machine or with what else runs on it the way CPU time does: runs of
 * one build have agreed within 1–8% for the event loop's thread (what V8 had optimised by then, and
 * the timers that fire by the clock while everything runs slower, still vary); the other threads,
 * V8's collector and compiler helpers above all, move with when they ran. It counts user-space instructions only — no
 * system calls, no cache misses — so it finds work that need not be done; a change's worth in
 * time is still the floor's and the A/B's to say (docs/performance.md, "String methods looked up
 * in a dictionary"). Every instruction is simulated: about 50 times slower than running.
 *
 * Needs valgrind (`apt-get install valgrind`). Run: npm run bench -- instructions
 * or npx tsx bench/instructions.ts [--quick] [--keep DIR] (DIR receives each proxy's callgrind
 * file of its event loop's thread, for `callgrind_annotate`).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  issueBenchKey,
  plainJs,
  printTable,
  sendRequests,
  startChild,
  tollgateEntry,
  uniqueBody,
  type BenchResult,
  type Child,
  type LoadTarget,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';
const FLOOR_KEY = 'tg-floor-key';
const CONNECTIONS = 16;

/** The load: unique 1 KB chat bodies to `url`'s chat completions with `key`. */
function chatTarget(url: string, key: string): LoadTarget {
  return {
    baseUrl: url,
    path: '/chat/completions',
    body: () => uniqueBody(false),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
  };
}

/** Runs callgrind_control for `pid`; fails loudly, since a count taken without it is meaningless. */
function control(pid: number, ...args: string[]): void {
  const result = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`callgrind_control ${args.join(' ')} failed: ${result.stderr || result.stdout}`);
}

/** The instructions callgrind counted in each thread's dump (`<out>-01` is the first thread: the event loop). */
function countsByThread(dir: string, out: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of readdirSync(dir).filter((name) => name.startsWith(`${out}.`))) {
    const totals = /^totals: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'));
    if (totals !== null) counts.set(file, Number(totals[1]));
  }
  return counts;
}

export async function runInstructionsBench(options: { quick: boolean; keep?: string }): Promise<BenchResult[]> {
  if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('the instructions bench needs valgrind (apt-get install valgrind)');
  const warm = options.quick ? 1500 : 3000;
  const counted = options.quick ? 1000 : 2000;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-instructions-'));
  const children: Child[] = [];
  try {
    const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
    children.push(fake);
    const dist = join(tollgateEntry(), '..', '..');
    const hop = plainJs('bench/floor-hop.ts', { besideModules: true });
    const bothDb = join(scratch, 'both.db');
    issueBenchKey(bothDb);
    const tollgateDb = join(scratch, 'tollgate.db');
    const tollgateKey = issueBenchKey(tollgateDb);
    const proxies: Array<{ name: string; key: string; args: string[]; env: Record<string, string> }> = [
      { name: 'bare node:http hop', key: UPSTREAM_KEY, args: [plainJs('bench/bare-proxy.ts'), fake.url], env: {} },
      { name: 'floor: tollgate-both', key: FLOOR_KEY, args: [hop, fake.url, 'tollgate-both', dist, bothDb, FLOOR_KEY], env: {} },
      {
        name: 'Tollgate',
        key: tollgateKey,
        args: [tollgateEntry(), 'serve'],
        env: {
          TOLLGATE_DB: tollgateDb,
          TOLLGATE_UPSTREAM_URL: fake.url,
          TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
          TOLLGATE_LOG_LEVEL: 'info',
          TOLLGATE_PORT: '0',
          TOLLGATE_HOST: '127.0.0.1',
        },
      },
    ];
    const results: BenchResult[] = [];
    let bare: number | undefined;
    for (const [index, proxy] of proxies.entries()) {
      const out = `callgrind-${index}`;
      // One at a time: under valgrind each proxy needs a core to itself to finish in minutes.
      const child = await startChild(
        proxy.args,
        proxy.env,
        [],
        [
          'valgrind',
          '--quiet',
          '--tool=callgrind',
          '--instr-atstart=no',
          '--separate-threads=yes',
          // V8 writes and rewrites machine code: valgrind must notice, or it runs stale translations.
          '--smc-check=all-non-file',
          `--callgrind-out-file=${join(scratch, out)}`,
        ],
      );
      children.push(child);
      const pid = child.process.pid!;
      await sendRequests(chatTarget(child.url, proxy.key), CONNECTIONS, warm); // JIT, pools, tokenizer
      control(pid, '--zero');
      control(pid, '--instr=on');
      await sendRequests(chatTarget(child.url, proxy.key), CONNECTIONS, counted);
      control(pid, '--instr=off');
      control(pid, '--dump');
      await child.stop();
      const counts = countsByThread(scratch, out);
      const loopFile = [...counts.keys()].find((file) => file.endsWith('-01'));
      if (loopFile === undefined) throw new Error(`no callgrind dump of ${proxy.name}'s event loop`);
      if (options.keep !== undefined) copyFileSync(join(scratch, loopFile), join(options.keep, `${proxy.name.replace(/[^a-z0-9]+/gi, '-')}.callgrind`));
      const loop = counts.get(loopFile)! / counted;
      const all = [...counts.values()].reduce((sum, value) => sum + value, 0) / counted;
      bare ??= loop;
      results.push(
        { name: `instructions per request, event loop, ${proxy.name}`, value: loop, unit: 'instr', note: `${(loop / bare).toFixed(2)}× the bare hop's` },
        { name: `instructions per request, all threads, ${proxy.name}`, value: all, unit: 'instr' },
      );
    }
    return results;
  } finally {
    for (const child of children.reverse()) await child.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const keepAt = process.argv.indexOf('--keep');
  const keep = keepAt === -1 ? undefined : process.argv[keepAt + 1];
  printTable(await runInstructionsBench({ quick: process.argv.includes('--quick'), ...(keep === undefined ? {} : { keep }) }));
}
