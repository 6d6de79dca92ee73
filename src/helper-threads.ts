/**
 * The event loop first on a busy core. Besides the loop, a Node process runs
 * helper threads: V8's collector and compiler helpers (four by default,
 * whatever the core count), libuv's pool, and Tollgate's own workers (the WAL
 * checkpointer, dashboard reads, large-body estimates). On a core they share
 * with the loop, the kernel gives each its turn, and the loop — which serves
 * every request — waits: measured on one core at 400 req/s, the loop was
 * ready but waiting for the core during three quarters of its stalls over
 * 10 ms (docs/performance.md, "The loop waits for its own helpers").
 *
 * So the serving process lowers its helper threads' priority (a higher nice
 * value; on Linux nice is per thread): they still run whenever the core has
 * time, and get it at once on a machine with cores to spare, but the loop
 * comes first. Threads start later too (libuv's pool on first use, the
 * estimate pool on the first large body), so the threads are looked at again
 * every few seconds; a thread is changed once, and only ever to yield more
 * (src/estimate/estimate-worker.ts sets its own). Linux only (elsewhere the
 * nice value is per process): anywhere without `/proc/self/task` this does
 * nothing.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** How often new helper threads are looked for. */
const RESCAN_MS = 5_000;

export interface HelperThreads {
  /** Stops looking for new threads (those already changed stay so). */
  stop(): void;
}

/**
 * Gives every thread of this process but the loop's at least the nice value
 * `nice` (1–19; 0 leaves them alone), now and as they start. Call from the main
 * thread: its thread id is the process id.
 */
export function deprioritizeHelperThreads(nice: number): HelperThreads {
  if (nice <= 0 || !helperThreadsVisible()) return { stop() {} };
  const done = new Set<number>();
  const scan = (): void => {
    let threads: string[];
    try {
      threads = readdirSync('/proc/self/task');
    } catch {
      return;
    }
    const alive = new Set<number>();
    for (const entry of threads) {
      const tid = Number(entry);
      alive.add(tid);
      if (tid === process.pid || done.has(tid)) continue;
      done.add(tid);
      try {
        // Never raised back: a thread that already yields more (the estimate worker's own 10) stays so.
        if (getPriority(tid) < nice) setPriority(tid, nice);
      } catch {
        // The thread ended between the listing and the call: nothing to do.
      }
    }
    // Thread ids are reused: forget those that ended.
    for (const tid of done) if (!alive.has(tid)) done.delete(tid);
  };
  scan();
  const timer = setInterval(scan, RESCAN_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

function helperThreadsVisible(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    readdirSync('/proc/self/task');
    return true;
  } catch {
    return false;
  }
}
