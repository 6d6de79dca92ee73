/**
 * Big bodies against another tenant: while one to four
 * senders — each its own tenant — post 20 MB bodies of 600k tiny messages
 * (refused with a 400: far beyond any context window) as fast as they are
 * answered, another tenant sends small chat requests one after another, one
 * every 25 ms; prints that tenant's p50/p99/max latency per phase, how many
 * big bodies were answered, and Tollgate's own event-loop delay (p99 over
 * the phase, from /metrics). Before large bodies were parsed on the worker,
 * one sender took the other tenant's p99 to 1.8 s. Target: under 100 ms.
 * Loopback only; the built proxy (`npm run build` happens on first use).
 *
 * Run: npx tsx bench/body-flood.ts [--seconds 10] [--senders 0,1,4] [--same-key]
 *      [--stalls]   (loads bench/stall-probe.ts into Tollgate: its worst event-loop stalls and GC pauses)
 *      [--cpu-prof DIR]   (Tollgate writes a .cpuprofile there when it exits)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { percentile, printTable, startChild, startTollgate, type BenchResult } from './support.js';

const UPSTREAM_KEY = 'sk-body-flood';
const MESSAGES = 600_000;
const VICTIM_INTERVAL_MS = 25;

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}
const seconds = Number(argument('--seconds') ?? 10);
const phases = (argument('--senders') ?? '0,1,4').split(',').map(Number);
const sameKey = process.argv.includes('--same-key');
const probeStalls = process.argv.includes('--stalls');
const cpuProfDir = argument('--cpu-prof');

const dir = mkdtempSync(join(tmpdir(), 'tollgate-body-flood-'));
const dbPath = join(dir, 'flood.db');
const setup = openDatabase(dbPath);
const store = new KeyStore(setup);
const victimKey = store.createKey({ name: 'victim', policy: { limits: [] } }).key;
const senderKeys = Array.from({ length: Math.max(...phases, 1) }, (_, i) =>
  sameKey && i > 0 ? undefined : store.createKey({ name: `sender-${i}`, policy: { limits: [] } }).key,
).map((key, _, keys) => key ?? keys[0]!);
setup.close();

const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
const stallFile = join(dir, 'stalls.json');
const proxy = await startTollgate(
  {
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_DB: dbPath,
    TOLLGATE_LOG_LEVEL: 'warn',
    ...(probeStalls ? { TOLLGATE_BENCH_STALL_FILE: stallFile } : {}),
  },
  cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', cpuProfDir],
  probeStalls ? ['bench/stall-probe.ts'] : [],
);
const origin = new URL(proxy.url).origin;

const flood = Buffer.from(
  `{"model":"gpt-4o-mini","messages":[${Array.from({ length: MESSAGES }, (_, i) => `{"role":"user","content":"m${i % 10}"}`).join(',')}]}`,
);
const small = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'How are you today?' }], max_tokens: 20 });

/** Tollgate's event-loop delay p99 (seconds) since the last scrape (prom-client resets its histogram at each). */
async function loopDelayP99(): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_nodejs_eventloop_lag_p99_seconds'));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

interface Phase {
  readonly latencies: number[];
  readonly victimErrors: number;
  readonly floods: Map<number, number>;
  readonly loopP99Ms: number;
}

async function runPhase(senders: number): Promise<Phase> {
  await loopDelayP99();
  const stopAt = performance.now() + seconds * 1000;
  const floods = new Map<number, number>();
  const sender = async (key: string): Promise<void> => {
    const pool = new Pool(origin, { connections: 1 });
    try {
      while (performance.now() < stopAt) {
        const res = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: flood,
        });
        await res.body.arrayBuffer();
        floods.set(res.statusCode, (floods.get(res.statusCode) ?? 0) + 1);
      }
    } finally {
      await pool.close();
    }
  };
  const victim = async (): Promise<{ latencies: number[]; errors: number }> => {
    const pool = new Pool(origin, { connections: 1 });
    const latencies: number[] = [];
    let errors = 0;
    try {
      while (performance.now() < stopAt) {
        const started = performance.now();
        const res = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { authorization: `Bearer ${victimKey}`, 'content-type': 'application/json' },
          body: small,
        });
        await res.body.arrayBuffer();
        const took = performance.now() - started;
        if (res.statusCode === 200) latencies.push(took);
        else errors += 1;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, VICTIM_INTERVAL_MS - took)));
      }
    } finally {
      await pool.close();
    }
    return { latencies, errors };
  };
  const [measured] = await Promise.all([victim(), ...senderKeys.slice(0, senders).map((key) => sender(key))]);
  return { latencies: measured.latencies, victimErrors: measured.errors, floods, loopP99Ms: (await loopDelayP99()) * 1000 };
}

try {
  // Warm up: tokenizers, the worker, connections.
  for (let i = 0; i < 20; i += 1) {
    await (
      await fetch(`${proxy.url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${victimKey}`, 'content-type': 'application/json' },
        body: small,
      })
    ).arrayBuffer();
  }
  const results: BenchResult[] = [];
  for (const senders of phases) {
    const phase = await runPhase(senders);
    const label = `${senders} sender${senders === 1 ? '' : 's'}`;
    const answered = [...phase.floods].map(([status, count]) => `${count}×${status}`).join(', ') || 'none';
    results.push(
      { name: `other tenant p50, ${label}`, value: percentile(phase.latencies, 50), unit: 'ms', note: `${phase.latencies.length} requests` },
      {
        name: `other tenant p99, ${label}`,
        value: percentile(phase.latencies, 99),
        unit: 'ms',
        note: phase.victimErrors > 0 ? `${phase.victimErrors} not 200` : 'target < 100 ms',
      },
      { name: `other tenant max, ${label}`, value: Math.max(...phase.latencies), unit: 'ms' },
      { name: `event-loop delay p99, ${label}`, value: phase.loopP99Ms, unit: 'ms', note: `20 MB bodies answered in ${seconds} s: ${answered}` },
    );
  }
  printTable(results);
} finally {
  await proxy.stop();
  await fake.stop();
  if (probeStalls) printStalls();
  rmSync(dir, { recursive: true, force: true });
}

/** The probe's worst stalls, each with the GC pauses that overlap it, and the GC time in all. */
function printStalls(): void {
  const { stalls, gcs } = JSON.parse(readFileSync(stallFile, 'utf8')) as {
    stalls: { at: number; ms: number }[];
    gcs: { at: number; ms: number; kind: string }[];
  };
  const worst = [...stalls].sort((a, b) => b.ms - a.ms).slice(0, 10);
  process.stdout.write(
    `\nevent-loop stalls over 10 ms: ${stalls.length}; GC pauses ≥ 1 ms: ${gcs.length}, ${Math.round(gcs.reduce((sum, gc) => sum + gc.ms, 0))} ms in all\n`,
  );
  for (const stall of worst) {
    const during = gcs.filter((gc) => gc.at < stall.at + stall.ms && gc.at + gc.ms > stall.at - 2);
    process.stdout.write(
      `  ${stall.ms.toFixed(1)} ms${during.length > 0 ? `, GC: ${during.map((gc) => `${gc.kind} ${gc.ms.toFixed(1)} ms`).join(', ')}` : ''}\n`,
    );
  }
}
