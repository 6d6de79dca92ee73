/**
 * Ledger exports at scale: a real `tollgate serve` streams N ledger rows as
 * NDJSON to a client that counts bytes, while another client asks /healthz
 * every 20 ms. Measured: the server's resident memory before and at its peak
 * (VmHWM, from /proc), rows per second, and the slowest /healthz answer
 * during the export (how long the export holds the event loop). Then the
 * CLI exports the same rows as CSV to /dev/null under /usr/bin/time (its
 * peak RSS). Constant memory means the peak does not grow with N.
 *
 * Run: npx tsx bench/export.ts [--rows 200000,1000000] [--quick]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { fillLedger } from '../test/support/ledger-rows.js';
import { percentile, printTable, REPO_ROOT, startTollgate, type BenchResult } from './support.js';

const ADMIN = 'bench-admin-token-0123456789';
const DAY = '2026-01-15';

/** A /proc/<pid>/status field in MiB (Linux). */
function procMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Peak RSS (MiB) of the CLI exporting the day as CSV to /dev/null, from GNU time. */
async function cliPeakMiB(dbPath: string): Promise<{ peak: number; seconds: number }> {
  const started = performance.now();
  const child = spawn(
    '/usr/bin/time',
    [
      '-f',
      '%M',
      process.execPath,
      '--import',
      'tsx',
      'src/cli/index.ts',
      '--db',
      dbPath,
      'ledger',
      'export',
      '--since',
      DAY,
      '--until',
      DAY,
      '--format',
      'csv',
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`the CLI export failed (${String(code)}): ${stderr}`);
  const kb = Number(/(\d+)\s*$/.exec(stderr.trim())?.[1]);
  return { peak: kb / 1024, seconds: (performance.now() - started) / 1000 };
}

async function exportRun(rows: number): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-export-bench-'));
  const dbPath = join(dir, 'bench.db');
  try {
    const database = openDatabase(dbPath);
    new KeyStore(database).createKey({ name: 'bench', policy: { limits: [] } });
    fillLedger(database.sqlite, { rows, day: DAY });
    database.sqlite.pragma('wal_checkpoint(TRUNCATE)');
    database.close();

    const server = await startTollgate({
      TOLLGATE_DB: dbPath,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'warn',
      TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
      TOLLGATE_UPSTREAM_KEY: 'sk-unused',
    });
    const pid = server.process.pid!;
    const origin = server.url.replace(/\/v1$/, '');
    try {
      // Warm the route once (module loading, first statement) so "before" is the steady state.
      await (await fetch(`${origin}/admin/api/ledger.ndjson?since=${DAY}&until=${DAY}&key=nobody`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
      const before = procMiB(pid, 'VmRSS');

      let exporting = true;
      const pings: number[] = [];
      const pinger = (async () => {
        while (exporting) {
          const started = performance.now();
          await (await fetch(`${origin}/healthz`)).text();
          pings.push(performance.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();

      const started = performance.now();
      const response = await fetch(`${origin}/admin/api/ledger.ndjson?since=${DAY}&until=${DAY}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      let bytes = 0;
      let lines = 0;
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.length;
        for (const byte of chunk) if (byte === 10) lines += 1;
      }
      const seconds = (performance.now() - started) / 1000;
      exporting = false;
      await pinger;
      if (lines !== rows) throw new Error(`exported ${lines} rows, expected ${rows}`);
      const peak = procMiB(pid, 'VmHWM');
      const cli = await cliPeakMiB(dbPath);
      const label = `${rows.toLocaleString('en-US')} rows`;
      return [
        { name: `export ${label}: server RSS before`, value: before, unit: 'MiB' },
        { name: `export ${label}: server peak RSS`, value: peak, unit: 'MiB', note: `VmHWM; ${(bytes / 2 ** 20).toFixed(0)} MiB of NDJSON sent` },
        { name: `export ${label}: NDJSON rows/s`, value: rows / seconds, unit: 'rows/s', note: `${seconds.toFixed(1)} s over HTTP` },
        {
          name: `export ${label}: /healthz during export`,
          value: Math.max(...pings),
          unit: 'ms max',
          note: `p50 ${percentile(pings, 50).toFixed(1)} ms, p99 ${percentile(pings, 99).toFixed(1)} ms, ${pings.length} pings`,
        },
        { name: `export ${label}: CLI peak RSS`, value: cli.peak, unit: 'MiB', note: `CSV to /dev/null in ${cli.seconds.toFixed(1)} s (tsx included)` },
      ];
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runExportBench(options: { quick?: boolean; rows?: readonly number[] } = {}): Promise<BenchResult[]> {
  const sizes = options.rows ?? (options.quick ? [200_000] : [200_000, 1_000_000]);
  const results: BenchResult[] = [];
  for (const rows of sizes) {
    process.stderr.write(`bench: export of ${rows} rows…\n`);
    results.push(...(await exportRun(rows)));
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rowsIndex = process.argv.indexOf('--rows');
  const rows = rowsIndex === -1 ? undefined : (process.argv[rowsIndex + 1] ?? '').split(',').map(Number);
  printTable(await runExportBench({ quick: process.argv.includes('--quick'), ...(rows ? { rows } : {}) }));
}
