/**
 * Proxy overhead: the same 1 KB chat request sent directly to the fake
 * upstream, through a bare node:http pass-through, and through Tollgate.
 * Each runs in its own process; rounds interleave the three in a random
 * order so drift on a noisy machine hits all of them alike; medians win.
 *
 * Run: npx tsx bench/proxy.ts [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  issueBenchKey,
  median,
  measureLatency,
  measureThroughput,
  percentile,
  printTable,
  shuffled,
  plainJs,
  startChild,
  startTollgate,
  type BenchResult,
  type LoadTarget,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';

/** A chat body of about 1 KB. */
export function chatBody1k(): string {
  const filler = 'The quick brown fox jumps over the lazy dog near the riverbank at dawn. ';
  return JSON.stringify({
    model: 'gpt-4o-mini',
    max_tokens: 64,
    messages: [
      { role: 'system', content: 'You are a helpful assistant that answers briefly and precisely.' },
      { role: 'user', content: filler.repeat(12).trim() },
    ],
  });
}

export interface TollgateTarget {
  /** Extra environment for `tollgate serve`. */
  readonly env: Record<string, string>;
  /** Headers a client sends to Tollgate (e.g. its key). */
  readonly headers: Record<string, string>;
  readonly label: string;
}

/**
 * Hook for later stages to run Tollgate with keys, buckets and a ledger: given
 * the upstream URL and a scratch directory, return how to start and call it.
 */
export type PrepareTollgate = (upstreamUrl: string, scratchDir: string) => Promise<TollgateTarget>;

/**
 * Tollgate as deployed: a key with request, token and dollar limits and a
 * budget (all far above what the bench spends, so nothing is refused), the
 * estimate, the buckets and the ledger on a SQLite file in the scratch dir.
 */
const fullTollgate: PrepareTollgate = async (_upstreamUrl, scratchDir) => {
  const dbPath = join(scratchDir, 'bench.db');
  const key = issueBenchKey(dbPath);
  return { env: { TOLLGATE_DB: dbPath }, headers: { authorization: `Bearer ${key}` }, label: 'tollgate' };
};

export async function runProxyBench(options: { quick?: boolean; prepare?: PrepareTollgate } = {}): Promise<BenchResult[]> {
  const rounds = options.quick ? 3 : 7;
  const latencyCount = options.quick ? 150 : 400;
  const throughputMs = options.quick ? 1000 : 2500;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
  const bare = await startChild([plainJs('bench/bare-proxy.ts'), fake.url]);
  const target = await (options.prepare ?? fullTollgate)(fake.url, scratch);
  const tollgate = await startTollgate({
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    // Production settings: one info line per request, as an operator would run it.
    TOLLGATE_LOG_LEVEL: 'info',
    ...target.env,
  });
  const body = chatBody1k();
  const json = { 'content-type': 'application/json' };
  const targets: Record<string, LoadTarget> = {
    direct: { baseUrl: fake.url, path: '/chat/completions', body, headers: { ...json, authorization: `Bearer ${UPSTREAM_KEY}` } },
    bare: { baseUrl: bare.url, path: '/chat/completions', body, headers: { ...json, authorization: `Bearer ${UPSTREAM_KEY}` } },
    tollgate: { baseUrl: tollgate.url, path: '/chat/completions', body, headers: { ...json, ...target.headers } },
  };
  const names = Object.keys(targets);
  const latency: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const p99: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const rps16: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const rps64: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  try {
    for (const name of names) await measureLatency(targets[name]!, 50); // warm up JIT, pools, encoders
    for (let round = 0; round < rounds; round += 1) {
      for (const name of shuffled(names)) {
        const samples = await measureLatency(targets[name]!, latencyCount);
        latency[name]!.push(median(samples));
        p99[name]!.push(percentile(samples, 99));
      }
      for (const name of shuffled(names)) rps16[name]!.push(await measureThroughput(targets[name]!, 16, throughputMs));
      for (const name of shuffled(names)) rps64[name]!.push(await measureThroughput(targets[name]!, 64, throughputMs));
    }
  } finally {
    await Promise.all([tollgate.stop(), bare.stop(), fake.stop()]);
    rmSync(scratch, { recursive: true, force: true });
  }
  const m = (series: Record<string, number[]>, name: string) => median(series[name]!);
  const results: BenchResult[] = [];
  for (const name of names) {
    const label = name === 'tollgate' ? target.label : name;
    results.push({
      name: `latency c=1 ${label}`,
      value: m(latency, name) * 1000,
      unit: 'µs',
      note: `median of ${rounds} round medians; p99 ${(m(p99, name) * 1000).toFixed(0)} µs`,
    });
  }
  results.push({
    name: 'overhead c=1 tollgate − direct',
    value: (m(latency, 'tollgate') - m(latency, 'direct')) * 1000,
    unit: 'µs',
    note: 'added latency per request',
  });
  results.push({
    name: 'overhead c=1 bare − direct',
    value: (m(latency, 'bare') - m(latency, 'direct')) * 1000,
    unit: 'µs',
    note: 'what any node:http hop costs',
  });
  for (const [series, c] of [
    [rps16, 16],
    [rps64, 64],
  ] as const) {
    for (const name of names) {
      const label = name === 'tollgate' ? target.label : name;
      results.push({
        name: `throughput c=${c} ${label}`,
        value: m(series, name),
        unit: 'req/s',
        note: `ratio to direct ${(m(series, name) / m(series, 'direct')).toFixed(2)}`,
      });
    }
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const results = await runProxyBench({ quick: process.argv.includes('--quick') });
  printTable(results);
}
