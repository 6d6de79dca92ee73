/**
 * WAL checkpoints off the event loop. SQLite normally checkpoints inside
 * whichever commit pushes the WAL past 1000 pages, and with better-sqlite3
 * that commit runs on the event loop: measured, a 20–30 ms stall every few
 * thousand requests. Instead the writer's connection turns automatic
 * checkpoints off and a worker thread, with its own connection to the same
 * file, checkpoints every half second (PASSIVE: it never blocks writers),
 * truncating the WAL when it has grown large.
 *
 * A TRUNCATE checkpoint holds the write lock while it waits for readers, so
 * with a busy timeout it could hold every commit up for that long
 * (`database is locked` under sustained load). The worker's connection has no
 * busy timeout: a TRUNCATE that would have to wait gives up at once and is
 * tried again on a later tick, and the commits it would have blocked go on.
 */
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

// Plain JS evaluated in the worker, so it runs the same from src/ (tsx) and dist/.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 0');
let stopping = false;
function tick() {
  if (stopping) return;
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    // Once the WAL is large and fully copied, restart it so the file stops growing.
    // (A busy TRUNCATE returns busy = 1 rather than throwing; the next tick tries again.)
    if (result && result.log > workerData.truncatePages && result.checkpointed === result.log) db.pragma('wal_checkpoint(TRUNCATE)');
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
  /** WAL size (pages) past which a fully copied WAL is truncated. */
  readonly truncatePages?: number;
  readonly onError?: (message: string) => void;
}

/** Starts checkpointing `path` from a worker; turns automatic checkpoints off on `writer`. */
export function startCheckpointer(path: string, writer: Database.Database, options: CheckpointerOptions = {}): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      path,
      driver: import.meta.resolve('better-sqlite3').replace(/^file:\/\//, ''),
      intervalMs: options.intervalMs ?? 500,
      truncatePages: options.truncatePages ?? 16_384,
    },
  });
  worker.unref();
  writer.pragma('wal_autocheckpoint = 0');
  worker.on('message', (message: { ok?: boolean; message?: string }) => {
    if (message.ok === false) options.onError?.(message.message ?? 'checkpoint failed');
  });
  worker.on('error', (error) => {
    // Without the worker, fall back to SQLite's own checkpoints on the writer.
    writer.pragma('wal_autocheckpoint = 1000');
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
