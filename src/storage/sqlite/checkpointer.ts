/**
 * WAL checkpoints off the event loop. SQLite normally checkpoints inside
 * whichever commit pushes the WAL past 1000 pages, and with better-sqlite3
 * that commit runs on the event loop: measured, a 20–30 ms stall every few
 * thousand requests. Instead the connections that commit (the shared one and
 * the ledger writer's) turn automatic checkpoints off and a worker thread,
 * with its own connection to the same file, checkpoints every half second
 * (PASSIVE: it never blocks writers).
 *
 * The WAL only starts again from its beginning when a writer finds it fully
 * checkpointed, and under steady load a commit almost always lands while a
 * PASSIVE checkpoint runs, so the WAL keeps growing. Once it holds more than
 * `restartPages` frames and a PASSIVE pass copied them all, a RESTART
 * checkpoint makes the next writer start over. RESTART holds the write lock
 * only while it copies what was committed since that pass (1–4 ms measured).
 * TRUNCATE would also shrink the file, but the truncation holds the write lock
 * for 35–50 ms (measured at c=1: every commit in that window waited, the
 * slowest requests of the run); so the file is truncated only once it has
 * grown past `truncateBytes` (a burst) and the WAL is nearly empty again.
 * Between those, the file stays at the most frames written between two
 * restarts (docs/operations.md).
 *
 * The worker's connection has no busy timeout: a RESTART or TRUNCATE that
 * would have to wait for a reader or a writer gives up at once and is tried
 * again on a later tick, and the commits it would have blocked go on.
 */
import { Worker } from 'node:worker_threads';
import type { TollgateDatabase } from './open.js';

// Plain JS evaluated in the worker, so it runs the same from src/ (tsx) and dist/.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 0');
const walFile = workerData.path + '-wal';
let stopping = false;
function walBytes() {
  try { return statSync(walFile).size; } catch { return 0; }
}
function tick() {
  if (stopping) return;
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    // A busy RESTART or TRUNCATE returns busy = 1 rather than throwing; the next tick tries again.
    if (result && result.checkpointed === result.log) {
      if (result.log > workerData.restartPages) db.pragma('wal_checkpoint(RESTART)');
      else if (result.log < workerData.restartPages / 8 && walBytes() > workerData.truncateBytes) db.pragma('wal_checkpoint(TRUNCATE)');
    }
    parentPort.postMessage({ ok: true, log: result ? result.log : 0 });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String(error && error.message || error) });
  }
  timer = setTimeout(tick, workerData.intervalMs);
}
let timer = setTimeout(tick, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'stop') {
    stopping = true;
    clearTimeout(timer);
    try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
    db.close();
    parentPort.postMessage({ stopped: true });
  }
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  readonly intervalMs?: number;
  /** WAL frames past which a fully copied WAL is restarted from its beginning. Default 4096 (16 MB of 4 KB pages). */
  readonly restartPages?: number;
  /** WAL file size past which the file is truncated once the WAL is nearly empty again. Default 64 MB. */
  readonly truncateBytes?: number;
  readonly onError?: (message: string) => void;
}

/** Starts checkpointing the database's file from a worker; turns automatic checkpoints off on every connection of it that commits. */
export function startCheckpointer(database: Pick<TollgateDatabase, 'path' | 'setAutoCheckpoint'>, options: CheckpointerOptions = {}): Checkpointer {
  const { path } = database;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      path,
      driver: import.meta.resolve('better-sqlite3').replace(/^file:\/\//, ''),
      intervalMs: options.intervalMs ?? 500,
      restartPages: options.restartPages ?? 4096,
      truncateBytes: options.truncateBytes ?? 64 * 1024 * 1024,
    },
  });
  worker.unref();
  database.setAutoCheckpoint(0);
  worker.on('message', (message: { ok?: boolean; message?: string }) => {
    if (message.ok === false) options.onError?.(message.message ?? 'checkpoint failed');
  });
  worker.on('error', (error) => {
    // Without the worker, fall back to SQLite's own checkpoints in the commits.
    database.setAutoCheckpoint(1000);
    options.onError?.(error.message);
  });
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        const done = (): void => {
          void worker.terminate().then(() => resolve());
        };
        worker.once('message', done);
        worker.once('exit', () => resolve());
        worker.postMessage('stop');
        setTimeout(done, 2000).unref();
      }),
  };
}
