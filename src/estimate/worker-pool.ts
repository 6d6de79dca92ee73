/**
 * A small, lazily started pool of worker threads for reading and estimating large bodies off the
 * event loop. The one I/O piece of the estimate module. Workers are unref'd while idle (they never
 * keep the process alive) and ref'd while a job is in flight (so a CLI awaiting an estimate does
 * not exit).
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { detachLargeStrings } from './detach-strings.js';
import type { Endpoint } from '../endpoints.js';
import type { EstimateOptions } from './estimate-body.js';
import type { EstimateJob, EstimateJobResult, OpenedBodyResult, WorkerInbound, WorkerOutbound } from './worker-protocol.js';

/** Strings at least this long are sent apart from the body, in slices of {@link SLICE_CHARS}. */
const DETACH_MIN_CHARS = 256 * 1024;
/** Characters posted per event-loop turn: ~0.5–1 ms of copying. */
const SLICE_CHARS = 256 * 1024;

interface PendingJob {
  readonly resolve: (result: WorkerOutbound) => void;
  readonly reject: (error: Error) => void;
}

/** A large body a worker has read and keeps until it is estimated or closed. */
export interface OpenedBody {
  /** What the worker read, with the body's bytes back (or its refusal). */
  readonly result: OpenedBodyResult;
  /** Estimates the kept body (with `model` in place of its own); the worker then lets it go. */
  estimate(endpoint: Endpoint, model: string | undefined, options: EstimateOptions, learnedMaxChars: number): Promise<EstimateJobResult>;
  /** Lets the kept body go without estimating it. */
  close(): void;
}

interface PoolWorker {
  readonly worker: Worker;
  readonly pending: Map<number, PendingJob>;
}

/**
 * How to start the worker entry beside this file, in the form this file runs as: the compiled
 * `.js` directly (plain node), or — under tsx / vitest, where this file is `.ts` — a tiny
 * bootstrap that registers tsx's loader in the new thread and then imports `estimate-worker.ts`.
 * (`execArgv: ['--import', 'tsx']` is not enough on Node 20: the hooks it registers do not apply
 * to a worker's entry module.)
 */
function createWorker(): Worker {
  const runningSource = import.meta.url.endsWith('.ts');
  if (!runningSource) return new Worker(new URL('./estimate-worker.js', import.meta.url));
  const entry = new URL('./estimate-worker.ts', import.meta.url).href;
  // Absolute, so the worker finds tsx whatever the process's working directory is.
  const tsxApi = resolveTsxEsmApi();
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true });
}

/**
 * URL of tsx's ESM API (`tsx/esm/api`, import condition). `import.meta.resolve` gives it directly;
 * where that is unavailable (some test runners), derive it from the CommonJS resolution.
 */
function resolveTsxEsmApi(): string {
  const resolveMeta = (import.meta as { resolve?: (specifier: string) => string }).resolve;
  if (typeof resolveMeta === 'function') {
    try {
      return resolveMeta('tsx/esm/api');
    } catch {
      // fall through
    }
  }
  const cjs = createRequire(import.meta.url).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/\.cjs$/, '.mjs')).href;
}

/** Runs estimate jobs on up to `size` workers, spreading them by outstanding jobs. */
export class EstimateWorkerPool {
  private readonly workers: PoolWorker[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly size: number) {}

  /** Workers currently running. */
  get started(): number {
    return this.workers.length;
  }

  /**
   * Sends a job; rejects if the worker dies or cannot start. Large strings of the body travel
   * separately, one slice per event-loop turn, so copying a big body never blocks for long.
   */
  async run(job: Omit<EstimateJob, 'id' | 'kind' | 'detached'>): Promise<EstimateJobResult> {
    if (this.closed) throw new Error('estimate worker pool is closed');
    const target = this.pickWorker();
    const id = this.nextId++;
    const result = new Promise<EstimateJobResult>((resolve, reject) => {
      target.pending.set(id, { resolve: (message) => resolve(message as EstimateJobResult), reject });
    });
    target.worker.ref();
    const post = (message: WorkerInbound): void => target.worker.postMessage(message);
    try {
      const { skeleton, strings } = detachLargeStrings(job.body, DETACH_MIN_CHARS);
      for (let index = 0; index < strings.length; index++) {
        const value = (strings[index] as { value: string }).value;
        for (let offset = 0; offset < value.length; offset += SLICE_CHARS) {
          if (!target.pending.has(id)) return await result; // the worker died; result rejects
          post({ kind: 'slice', jobId: id, stringIndex: index, text: value.slice(offset, offset + SLICE_CHARS) });
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      post({ ...job, kind: 'job', id, body: skeleton, detached: strings.map(({ path }) => ({ path })) });
    } catch (error) {
      try {
        post({ kind: 'cancel', jobId: id });
      } catch {
        // The worker is gone; nothing to clean up there.
      }
      const pending = target.pending.get(id);
      target.pending.delete(id);
      this.unrefIfIdle(target);
      pending?.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return result;
  }

  /**
   * Hands a body's bytes to a worker: the buffer is transferred (this thread loses it until the
   * answer brings it back), so nothing of it is copied or parsed here. Rejects if the worker dies
   * or cannot start; the bytes are then gone with it.
   */
  async open(endpoint: Endpoint, bytes: Buffer): Promise<OpenedBody> {
    if (this.closed) throw new Error('estimate worker pool is closed');
    const target = this.pickWorker();
    const id = this.nextId++;
    const send = (message: WorkerInbound, transfer?: ArrayBuffer[]): Promise<WorkerOutbound> => {
      const answer = new Promise<WorkerOutbound>((resolve, reject) => target.pending.set(id, { resolve, reject }));
      target.worker.ref();
      target.worker.postMessage(message, transfer);
      return answer;
    };
    const buffer = bytes.buffer as ArrayBuffer;
    if (bytes.byteOffset !== 0) throw new RangeError('a body handed to a worker must start its own buffer');
    const result = (await send({ kind: 'open', id, endpoint, buffer, byteLength: bytes.byteLength }, [buffer])) as OpenedBodyResult;
    let open = result.ok;
    return {
      result,
      estimate: async (estimateEndpoint, model, options, learnedMaxChars) => {
        if (!open) throw new Error('estimate worker: the body is not open');
        open = false;
        if (!this.workers.includes(target)) throw new Error('estimate worker exited');
        return (await send({ kind: 'estimate', id, endpoint: estimateEndpoint, model, options, learnedMaxChars })) as EstimateJobResult;
      },
      close: () => {
        if (!open) return;
        open = false;
        if (this.workers.includes(target)) target.worker.postMessage({ kind: 'close', id } satisfies WorkerInbound);
      },
    };
  }

  private pickWorker(): PoolWorker {
    let best: PoolWorker | undefined;
    for (const candidate of this.workers) {
      if (!best || candidate.pending.size < best.pending.size) best = candidate;
    }
    if (best && (best.pending.size === 0 || this.workers.length >= this.size)) return best;
    return this.startWorker();
  }

  private startWorker(): PoolWorker {
    const worker = createWorker();
    worker.unref();
    const entry: PoolWorker = { worker, pending: new Map() };
    worker.on('message', (result: WorkerOutbound) => {
      const job = entry.pending.get(result.id);
      if (!job) return;
      entry.pending.delete(result.id);
      this.unrefIfIdle(entry);
      job.resolve(result);
    });
    const fail = (error: Error): void => {
      this.forget(entry);
      for (const job of entry.pending.values()) job.reject(error);
      entry.pending.clear();
    };
    worker.on('error', (error: Error) => fail(error));
    worker.on('exit', (code) => {
      if (entry.pending.size > 0) fail(new Error(`estimate worker exited with code ${code}`));
      else this.forget(entry);
    });
    this.workers.push(entry);
    return entry;
  }

  private unrefIfIdle(entry: PoolWorker): void {
    if (entry.pending.size === 0) entry.worker.unref();
  }

  private forget(entry: PoolWorker): void {
    const index = this.workers.indexOf(entry);
    if (index !== -1) this.workers.splice(index, 1);
  }

  /** Terminates every worker; jobs in flight are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers.splice(0);
    await Promise.all(
      workers.map(async (entry) => {
        for (const job of entry.pending.values()) job.reject(new Error('estimate worker pool closed'));
        entry.pending.clear();
        await entry.worker.terminate();
      }),
    );
  }
}
