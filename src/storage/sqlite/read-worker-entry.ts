/**
 * Worker thread entry (read-worker.ts): the dashboard's SQLite reads and the
 * spend reports, on the thread's own read-only connection to the file (WAL:
 * it reads a consistent snapshot while the proxy writes), one job at a time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { setTimeZone } from '../../domain/calendar.js';
import { openDatabase } from './open.js';
import { TollgateError } from '../../domain/errors.js';
import { querySpend } from './spend-reads.js';
import type { SpendQuery } from '../spend-reads.js';
import { SqliteDashboardReads } from './dashboard-reads.js';
import type { ReadJob, ReadResult, WorkerReadMethod } from './read-worker-protocol.js';

const { path, timeZone } = workerData as { path: string; timeZone: string };
setTimeZone(timeZone);
const database = openDatabase(path, { readonly: true });
const reads = new SqliteDashboardReads(database);

async function run(job: ReadJob): Promise<unknown> {
  if (job.method === 'spend') return querySpend(database, job.args[0] as SpendQuery, job.args[1] as number);
  const method = reads[job.method as WorkerReadMethod] as (...args: unknown[]) => Promise<unknown>;
  return method.apply(reads, [...job.args]);
}

parentPort!.on('message', (job: ReadJob) => {
  run(job).then(
    (value) => parentPort!.postMessage({ id: job.id, ok: true, value } satisfies ReadResult),
    (error: unknown) => {
      const known = error instanceof TollgateError ? error : undefined;
      parentPort!.postMessage({
        id: job.id,
        ok: false,
        error: {
          code: known?.code,
          message: error instanceof Error ? error.message : String(error),
          param: known?.param ?? null,
          headers: known?.headers ?? {},
        },
      } satisfies ReadResult);
    },
  );
});
