/** Messages between the main thread and the read worker (read-worker.ts); structured-clone friendly. */
import type { DashboardReads } from '../dashboard-reads.js';

/** The dashboard reads the worker answers (the directory stays on the main thread: it is small, cached and re-read only on change). */
export type WorkerReadMethod = Exclude<keyof DashboardReads, 'directory'>;

/** Main → worker: one read. `spend` is querySpend(query, now). */
export interface ReadJob {
  readonly id: number;
  readonly method: WorkerReadMethod | 'spend';
  readonly args: readonly unknown[];
}

/** Worker → main: its answer, or the error (a TollgateError's code, param and headers kept). */
export type ReadResult =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | {
      readonly id: number;
      readonly ok: false;
      readonly error: { readonly code: string | undefined; readonly message: string; readonly param: string | null; readonly headers: Record<string, string> };
    };
