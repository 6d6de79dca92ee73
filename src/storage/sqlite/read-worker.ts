/**
 * The dashboard's and the spend reports' SQLite reads, off the event loop.
 *
 * better-sqlite3 is synchronous: a read that sums a tenant's month of
 * end-user rows holds the proxy's event loop for its whole duration, and
 * every other tenant's requests wait behind it (measured: 1.8 s for one
 * dashboard page). Here the reads run on one worker thread with its own
 * read-only connection to the file (WAL lets it read while the proxy
 * writes); the event loop only posts the job and receives the answer.
 * The request path's own reads (budgets, the key cache) stay where they are.
 *
 * The worker starts on the first read, is unref'd while idle (it never keeps
 * the process alive) and restarts after a crash. At most `maxQueued` reads
 * wait for it; more are refused with 503 `reports_busy`, so a client polling
 * reports in a loop cannot queue without bound. The key directory (keys and
 * tenants, small, re-read only when one changed) stays on the main thread.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { currentTimeZone } from '../../domain/calendar.js';
import type { TollgateDatabase } from './open.js';
import { TollgateError, type ErrorCode } from '../../domain/errors.js';
import type { SpendTotals } from '../spend-reads.js';
import { DirectoryReader } from './directory.js';
import type { Directory } from '../directory.js';
import type { DashboardReads, DayPoint, HourPoint, Page, PeriodTotals, RequestRow, SpendByKey, TopRow } from '../dashboard-reads.js';
import type { ReadJob, ReadResult, WorkerReadMethod } from './read-worker-protocol.js';

/** Reads waiting for the worker at most, by default. */
const MAX_QUEUED = 64;

/**
 * How to start the worker entry beside this file, in the form this file runs
 * as: the compiled `.js` (plain node), or under tsx/vitest a bootstrap that
 * registers tsx's loader in the thread first (as src/estimate/worker-pool.ts
 * does, for the same reason: on Node 20 `--import tsx` does not reach a
 * worker's entry module).
 */
function startWorker(workerData: unknown): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./read-worker-entry.js', import.meta.url), { workerData });
  const entry = new URL('./read-worker-entry.ts', import.meta.url).href;
  const bootstrap = `import(${JSON.stringify(tsxEsmApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** URL of tsx's ESM API, whatever the process's working directory. */
function tsxEsmApi(): string {
  const resolve = (import.meta as { resolve?: (specifier: string) => string }).resolve;
  if (typeof resolve === 'function') {
    try {
      return resolve('tsx/esm/api');
    } catch {
      // fall through
    }
  }
  return pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
}

interface Waiting {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/** One worker thread answering reads of one SQLite file. */
export class ReadWorker {
  private readonly path: string;
  private readonly maxQueued: number;
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  constructor(path: string, options: { readonly maxQueued?: number } = {}) {
    this.path = path;
    this.maxQueued = options.maxQueued ?? MAX_QUEUED;
  }

  /** Reads waiting for an answer. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Runs one read on the worker. */
  call<T>(method: WorkerReadMethod | 'spend', args: readonly unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the read worker is closed'));
    if (this.waiting.size >= this.maxQueued) {
      return Promise.reject(
        new TollgateError('reports_busy', 'Too many reports are being read at once; try again shortly.', { headers: { 'retry-after': '1' } }),
      );
    }
    const worker = this.running();
    const id = this.nextId++;
    const answer = new Promise<T>((resolve, reject) => this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject }));
    worker.ref();
    worker.postMessage({ id, method, args } satisfies ReadJob);
    return answer;
  }

  private running(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = startWorker({ path: this.path, timeZone: currentTimeZone() });
    worker.unref();
    worker.on('message', (result: ReadResult) => {
      const waiter = this.waiting.get(result.id);
      if (waiter === undefined) return;
      this.waiting.delete(result.id);
      if (this.waiting.size === 0) worker.unref();
      if (result.ok) waiter.resolve(result.value);
      else {
        const { code, message, param, headers } = result.error;
        waiter.reject(code === undefined ? new Error(message) : new TollgateError(code as ErrorCode, message, { param, headers }));
      }
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the read worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Stops the worker; reads still waiting are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    for (const waiter of this.waiting.values()) waiter.reject(new Error('the read worker is closed'));
    this.waiting.clear();
    await worker?.terminate();
  }
}

/** The dashboard's SQLite reads (dashboard-reads.ts), answered by the worker; the directory read here. */
export class WorkerDashboardReads implements DashboardReads {
  private readonly directoryReader: DirectoryReader;
  private readonly worker: ReadWorker;

  constructor(database: TollgateDatabase, worker: ReadWorker) {
    this.directoryReader = new DirectoryReader(database.sqlite);
    this.worker = worker;
  }

  async directory(): Promise<Directory> {
    return this.directoryReader.read();
  }
  spendByKey(now: number): Promise<SpendByKey> {
    return this.worker.call('spendByKey', [now]);
  }
  keyLifetimeCost(keyId: string, now: number): Promise<number> {
    return this.worker.call('keyLifetimeCost', [keyId, now]);
  }
  dailySeries(now: number): Promise<DayPoint[]> {
    return this.worker.call('dailySeries', [now]);
  }
  keyDailySeries(keyId: string, now: number): Promise<DayPoint[]> {
    return this.worker.call('keyDailySeries', [keyId, now]);
  }
  hourlySeries(now: number, keyId?: string): Promise<HourPoint[]> {
    return this.worker.call('hourlySeries', keyId === undefined ? [now] : [now, keyId]);
  }
  keyTotals(keyId: string, since: string, now: number): Promise<PeriodTotals> {
    return this.worker.call('keyTotals', [keyId, since, now]);
  }
  tenantTotals(tenantId: string, since: string, now: number): Promise<PeriodTotals> {
    return this.worker.call('tenantTotals', [tenantId, since, now]);
  }
  tenantDailySeries(tenantId: string, now: number): Promise<DayPoint[]> {
    return this.worker.call('tenantDailySeries', [tenantId, now]);
  }
  tenantHourlySeries(tenantId: string, now: number): Promise<HourPoint[]> {
    return this.worker.call('tenantHourlySeries', [tenantId, now]);
  }
  keyModels(keyId: string, since: string, now: number): Promise<Array<{ model: string; totals: SpendTotals }>> {
    return this.worker.call('keyModels', [keyId, since, now]);
  }
  keyTop(keyId: string, by: 'user' | 'tag' | 'session', since: string, now: number, limit: number, cursor?: string): Promise<Page<TopRow>> {
    return this.worker.call('keyTop', [keyId, by, since, now, limit, cursor]);
  }
  latestRequests(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    return this.worker.call('latestRequests', [keyId, limit, cursor]);
  }
  recent429s(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>> {
    return this.worker.call('recent429s', [keyId, limit, cursor]);
  }
}
