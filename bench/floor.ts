/**
 * The floor under the CPU-per-request target (docs/performance.md, "The floor"): the bare
 * node:http hop, the least proxies on Tollgate's stack (bench/floor-hop.ts: the stack alone, then
 * with the prompt counted, then with the pending row committed before forwarding and settled
 * after, then with Tollgate's own estimate and ledger writer in their place) and Tollgate as
 * deployed, side by side in one run. Each proxy alone on core 1, the load and
 * the fake upstream on core 0, 16 connections of unique 1 KB chat bodies, rounds interleaved in a
 * new order each time; CPU per request is the user + system time of the proxy's whole process
 * over the requests it served, and apart the event loop's own thread (the rest is V8's helpers,
 * libuv's pool and Tollgate's worker threads); with them the read and write system calls, the
 * bytes written to the disk and the bytes the event loop's heap allocated per request
 * (bench/alloc-probe.ts, loaded into every proxy), counts that do not move with the machine's speed.
 *
 * Run: npm run bench -- floor   or   npx tsx bench/floor.ts [--quick] [--rounds N]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  allocatedBytes,
  cpuMicros,
  issueBenchKey,
  measureThroughput,
  median,
  pin,
  plainJs,
  printTable,
  processCpuMicros,
  shuffled,
  startChild,
  startTollgate,
  tollgateEntry,
  uniqueBody,
  type BenchResult,
  type Child,
  type LoadTarget,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';
const FLOOR_KEY = 'tg-floor-key';
/** bench/floor-hop.ts's steps, least first. */
const MODES = ['stack', 'count', 'exact', 'tollgate-estimate', 'tollgate-ledger', 'tollgate-both'] as const;

/** The process's read and write system calls so far, and the bytes it wrote to the disk (/proc/<pid>/io). */
function processIo(pid: number): { syscalls: number; diskBytes: number } {
  const fields = new Map(
    readFileSync(`/proc/${pid}/io`, 'utf8')
      .split('\n')
      .map((line) => line.split(': ') as [string, string]),
  );
  return { syscalls: Number(fields.get('syscr')) + Number(fields.get('syscw')), diskBytes: Number(fields.get('write_bytes')) };
}

export async function runFloorBench(options: { quick: boolean; rounds?: number }): Promise<BenchResult[]> {
  const rounds = options.rounds ?? (options.quick ? 3 : 5);
  const durationMs = options.quick ? 2000 : 3000;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-floor-'));
  const children: Child[] = [];
  try {
    pin(process.pid, 0);
    const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
    children.push(fake);
    pin(fake.process.pid!, 0);
    // Built first: the floor hops count and write with Tollgate's built modules.
    const dist = join(tollgateEntry(), '..', '..');
    const hop = plainJs('bench/floor-hop.ts', { besideModules: true });
    const json = { 'content-type': 'application/json' };
    const proxies: Array<{ name: string; child: Child & { url: string }; key: string; allocFile: string }> = [];
    // Every proxy counts its heap's allocations the same way (bench/alloc-probe.ts), each into its own file.
    const probe = 'bench/alloc-probe.ts';
    const add = async (name: string, key: string, start: (env: Record<string, string>) => Promise<Child & { url: string }>): Promise<void> => {
      const allocFile = join(scratch, `alloc-${proxies.length}.json`);
      const child = await start({ TOLLGATE_BENCH_ALLOC_FILE: allocFile });
      children.push(child);
      pin(child.process.pid!, 1);
      proxies.push({ name, child, key, allocFile });
    };
    const plainChild = (args: string[]) => (env: Record<string, string>) => startChild(args, env, ['--import', plainJs(probe)]);
    await add('bare node:http hop', UPSTREAM_KEY, plainChild([plainJs('bench/bare-proxy.ts'), fake.url]));
    for (const mode of MODES) {
      const db = join(scratch, `${mode}.db`);
      // Tollgate's ledger writer needs its schema and a key its rows belong to.
      if (mode === 'tollgate-ledger' || mode === 'tollgate-both') issueBenchKey(db);
      await add(`floor: ${mode}`, FLOOR_KEY, plainChild([hop, fake.url, mode, dist, db, FLOOR_KEY]));
    }
    const dbPath = join(scratch, 'tollgate.db');
    const settings = { TOLLGATE_DB: dbPath, TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY, TOLLGATE_LOG_LEVEL: 'info' };
    await add('Tollgate', issueBenchKey(dbPath), (env) => startTollgate({ ...settings, ...env }, [], [probe]));
    const target = (proxy: (typeof proxies)[number]): LoadTarget => ({
      baseUrl: proxy.child.url,
      path: '/chat/completions',
      body: () => uniqueBody(false),
      headers: { ...json, authorization: `Bearer ${proxy.key}` },
    });
    for (const proxy of proxies) await measureThroughput(target(proxy), 16, 1500); // JIT, pools, tokenizer
    const cpu = new Map(proxies.map((proxy) => [proxy.name, [] as number[]]));
    const loop = new Map(proxies.map((proxy) => [proxy.name, [] as number[]]));
    const syscalls = new Map(proxies.map((proxy) => [proxy.name, [] as number[]]));
    const disk = new Map(proxies.map((proxy) => [proxy.name, [] as number[]]));
    const rate = new Map(proxies.map((proxy) => [proxy.name, [] as number[]]));
    const allocated = new Map(proxies.map((proxy) => [proxy.name, [] as number[]]));
    for (let round = 0; round < rounds; round += 1) {
      for (const proxy of shuffled(proxies)) {
        const pid = proxy.child.process.pid!;
        const allocBefore = await allocatedBytes(pid, proxy.allocFile);
        const [before, loopBefore, ioBefore] = [processCpuMicros(pid), cpuMicros(pid), processIo(pid)];
        const served = await measureThroughput(target(proxy), 16, durationMs);
        const requests = (served * durationMs) / 1000;
        rate.get(proxy.name)!.push(served);
        cpu.get(proxy.name)!.push((processCpuMicros(pid) - before) / requests);
        loop.get(proxy.name)!.push((cpuMicros(pid) - loopBefore) / requests);
        const ioAfter = processIo(pid);
        syscalls.get(proxy.name)!.push((ioAfter.syscalls - ioBefore.syscalls) / requests);
        disk.get(proxy.name)!.push((ioAfter.diskBytes - ioBefore.diskBytes) / requests);
        allocated.get(proxy.name)!.push(((await allocatedBytes(pid, proxy.allocFile)) - allocBefore) / requests);
      }
    }
    const bare = median(cpu.get(proxies[0]!.name)!);
    const bareLoop = median(loop.get(proxies[0]!.name)!);
    const bareAllocated = median(allocated.get(proxies[0]!.name)!);
    return proxies.flatMap(({ name }) => {
      const perRequest = median(cpu.get(name)!);
      const spread = `${Math.round(Math.min(...cpu.get(name)!))}–${Math.round(Math.max(...cpu.get(name)!))} µs`;
      return [
        { name: `floor: CPU per request, ${name}`, value: perRequest, unit: 'µs', note: `${(perRequest / bare).toFixed(2)}× the bare hop; rounds ${spread}` },
        {
          name: `floor: event loop's CPU per request, ${name}`,
          value: median(loop.get(name)!),
          unit: 'µs',
          note: `${(median(loop.get(name)!) / bareLoop).toFixed(2)}× the bare hop's`,
        },
        { name: `floor: reads and writes per request, ${name}`, value: median(syscalls.get(name)!), unit: 'syscalls' },
        { name: `floor: bytes written to disk per request, ${name}`, value: median(disk.get(name)!), unit: 'B' },
        {
          name: `floor: bytes the event loop's heap allocated per request, ${name}`,
          value: median(allocated.get(name)!),
          unit: 'B',
          note: `${(median(allocated.get(name)!) / bareAllocated).toFixed(2)}× the bare hop's`,
        },
        { name: `floor: req/s at 16 connections, ${name}`, value: median(rate.get(name)!), unit: 'req/s' },
      ];
    });
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const roundsIndex = process.argv.indexOf('--rounds');
  const rounds = roundsIndex === -1 ? undefined : Number(process.argv[roundsIndex + 1]);
  printTable(await runFloorBench({ quick: process.argv.includes('--quick'), ...(rounds === undefined ? {} : { rounds }) }));
}
