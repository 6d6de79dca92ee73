/**
 * `npm run bench`: every benchmark in one run, printed as one table and saved
 * as JSON in bench/results/. `--quick` for fewer rounds; `--only a,b` to pick
 * sections (proxy, estimate, ledger, limits, lease-utilization, redis, dashboard, streams, pg-scale, workers, targets, batch-upload, tracing,
 * helper-nice, floor, instructions), or name them: `npm run bench -- streams`. The many-open-streams section (bench/streams.ts) and the
 * PostgreSQL one at 10M rows (bench/pg-scale.ts) and the stream targets with their stall run
 * (bench/targets.ts), the helper threads' A/B (bench/helper-nice.ts) and the floor under the CPU target (bench/floor.ts) and the instruction counts under valgrind (bench/instructions.ts) take minutes, and the batch upload (bench/batch-upload.ts) writes 165 MB
 * of files, so they run only when named.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { printTable, REPO_ROOT, type BenchResult } from './support.js';

type Section = (options: { quick: boolean; priority?: number }) => Promise<BenchResult[]>;

const SECTIONS: Record<string, () => Promise<Section>> = {
  proxy: async () => (await import('./proxy.js')).runProxyBench,
  estimate: async () => (await import('./estimate.js')).runEstimateBench,
  ledger: async () => (await import('./ledger.js')).runLedgerBench,
  limits: async () => (await import('./limits.js')).runLimitsBench,
  'lease-utilization': async () => (await import('./lease-utilization.js')).runLeaseUtilizationBench,
  redis: async () => (await import('./redis.js')).runRedisBench,
  dashboard: async () => (await import('./dashboard.js')).runDashboardBench,
  streams: async () => (await import('./streams.js')).runStreamsBench,
  'pg-scale': async () => (await import('./pg-scale.js')).runPgScaleBench,
  workers: async () => (await import('./workers.js')).runWorkersBench,
  targets: async () => (await import('./targets.js')).runTargetsBench,
  'batch-upload': async () => (await import('./batch-upload.js')).runBatchUploadBench,
  tracing: async () => (await import('./tracing.js')).runTracingBench,
  'helper-nice': async () => (await import('./helper-nice.js')).runHelperNiceBench,
  floor: async () => (await import('./floor.js')).runFloorBench,
  instructions: async () => (await import('./instructions.js')).runInstructionsBench,
};
const OPT_IN = new Set(['streams', 'pg-scale', 'targets', 'batch-upload', 'tracing', 'helper-nice', 'floor', 'instructions']);

const quick = process.argv.includes('--quick');
const onlyIndex = process.argv.indexOf('--only');
const priorityIndex = process.argv.indexOf('--priority');
const priority = priorityIndex === -1 ? undefined : Number(process.argv[priorityIndex + 1]);
const named = process.argv.slice(2).filter((arg, i, args) => !arg.startsWith('--') && args[i - 1] !== '--only' && args[i - 1] !== '--priority');
const only =
  onlyIndex !== -1 ? (process.argv[onlyIndex + 1] ?? '').split(',') : named.length > 0 ? named : Object.keys(SECTIONS).filter((name) => !OPT_IN.has(name));

const results: BenchResult[] = [];
for (const name of only) {
  const load = SECTIONS[name];
  if (load === undefined) throw new Error(`unknown bench section "${name}" (known: ${Object.keys(SECTIONS).join(', ')})`);
  process.stderr.write(`bench: ${name}…\n`);
  const section = await load();
  results.push(...(await section(priority === undefined ? { quick } : { quick, priority })));
}

const machine = { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
process.stdout.write(`\nmachine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}${quick ? ' (quick run)' : ''}\n\n`);
printTable(results);
const dir = join(REPO_ROOT, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const file = join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), machine, quick, results }, null, 2)}\n`);
process.stdout.write(`\nsaved ${file}\n`);
