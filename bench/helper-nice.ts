/**
 * What TOLLGATE_HELPER_NICE buys (src/helper-threads.ts): Tollgate alone on
 * core 1 (every thread pinned there, as bench/targets.ts pins it), the load
 * generator and the fake upstream on core 0, a fixed rate of 1 KB chat bodies
 * (a different one each time), open loop, for `--seconds` after a warm-up;
 * rounds alternate a fresh Tollgate with its helper threads left alone
 * (nice 0) and one with them at 19 (what `auto` gives on one CPU). Per round: p50 / p99 / p99.9,
 * event-loop stalls over 10 ms (bench/stall-probe.ts) and the share of their
 * time the loop was ready but waited for the core; medians of the rounds.
 *
 * Run: npm run bench -- helper-nice
 *   or npx tsx bench/helper-nice.ts [--quick] [--rate N] [--seconds N] [--rounds N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  fixedRate,
  issueBenchKey,
  median,
  monotonicUs,
  percentile,
  pin,
  printTable,
  readStalls,
  startChild,
  startTollgate,
  uniqueBody,
  waitShareOf,
  type BenchResult,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';
const WARM_UP_SECONDS = 4;

interface Round {
  readonly latencies: number[];
  readonly errors: number;
  readonly stalls: number;
  readonly waitShare: number;
}

async function round(upstreamUrl: string, nice: number, rate: number, seconds: number): Promise<Round> {
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-helper-nice-'));
  const dbPath = join(scratch, 'bench.db');
  const key = issueBenchKey(dbPath);
  const stallFile = join(scratch, 'stalls.json');
  const tollgate = await startTollgate(
    {
      TOLLGATE_DB: dbPath,
      TOLLGATE_UPSTREAM_URL: upstreamUrl,
      TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
      TOLLGATE_LOG_LEVEL: 'info',
      TOLLGATE_HELPER_NICE: String(nice),
      TOLLGATE_BENCH_STALL_FILE: stallFile,
    },
    [],
    ['bench/stall-probe.ts'],
  );
  try {
    pin(tollgate.process.pid!, 1);
    const target = {
      baseUrl: tollgate.url,
      path: '/chat/completions',
      body: () => uniqueBody(false),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    };
    await fixedRate(target, rate, WARM_UP_SECONDS * 1000);
    const fromUs = monotonicUs();
    const measured = await fixedRate(target, rate, seconds * 1000);
    const toUs = monotonicUs();
    // The probe writes its file as the process exits.
    await tollgate.stop();
    const { stalls } = readStalls(stallFile, fromUs, toUs);
    return { ...measured, stalls: stalls.length, waitShare: waitShareOf(stalls) ?? 0 };
  } finally {
    await tollgate.stop(); // a no-op once stopped; here for a round that failed
    rmSync(scratch, { recursive: true, force: true });
  }
}

export async function runHelperNiceBench(options: { quick: boolean; rate?: number; seconds?: number; rounds?: number }): Promise<BenchResult[]> {
  const rate = options.rate ?? 400;
  const seconds = options.seconds ?? (options.quick ? 10 : 30);
  const rounds = options.rounds ?? (options.quick ? 1 : 3);
  pin(process.pid, 0);
  const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
  pin(fake.process.pid!, 0);
  const settings = [0, 19] as const;
  const measured = new Map<number, Round[]>(settings.map((nice) => [nice, []]));
  try {
    for (let r = 0; r < rounds; r += 1) {
      // Alternate which goes first, so drift hits both alike.
      for (const nice of r % 2 === 0 ? settings : [...settings].reverse()) {
        process.stderr.write(`helper-nice: round ${r + 1}, TOLLGATE_HELPER_NICE=${nice}, ${rate} req/s for ${seconds} s\n`);
        measured.get(nice)!.push(await round(fake.url, nice, rate, seconds));
      }
    }
  } finally {
    await fake.stop();
  }
  const results: BenchResult[] = [];
  const note = `${rate} req/s, ${seconds} s, median of ${rounds} round${rounds === 1 ? '' : 's'}`;
  for (const nice of settings) {
    const each = measured.get(nice)!;
    const label = `TOLLGATE_HELPER_NICE=${nice}`;
    for (const p of [50, 99, 99.9]) {
      results.push({ name: `${label}: p${p}`, value: median(each.map((x) => percentile(x.latencies, p))), unit: 'ms', note });
    }
    results.push({ name: `${label}: event-loop stalls over 10 ms`, value: median(each.map((x) => x.stalls)), unit: 'stalls', note });
    results.push({
      name: `${label}: stalls' time waiting for the core`,
      value: median(each.map((x) => x.waitShare * 100)),
      unit: '%',
      note: 'the loop ready, another thread of the process running',
    });
    results.push({ name: `${label}: errors`, value: each.reduce((sum, x) => sum + x.errors, 0), unit: 'requests', note: 'non-200 or failed, all rounds' });
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string): number | undefined => {
    const i = process.argv.indexOf(name);
    return i === -1 ? undefined : Number(process.argv[i + 1]);
  };
  const [rate, seconds, rounds] = [arg('--rate'), arg('--seconds'), arg('--rounds')];
  printTable(
    await runHelperNiceBench({
      quick: process.argv.includes('--quick'),
      ...(rate === undefined ? {} : { rate }),
      ...(seconds === undefined ? {} : { seconds }),
      ...(rounds === undefined ? {} : { rounds }),
    }),
  );
}
