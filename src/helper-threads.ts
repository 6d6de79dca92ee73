/**
 * The event loop first on a shared core. Besides the loop, a Node process
 * runs helper threads: V8's collector and compiler helpers (four by default,
 * whatever the core count), libuv's pool, and Tollgate's own workers (the WAL
 * checkpointer, dashboard reads, large-body estimates). Where the process may
 * use one core only (a one-CPU VM, `taskset`, a cpuset), the kernel gives
 * each of them its turn on the loop's core while requests wait: measured at
 * 400 req/s, the loop was ready but waiting for the core during three
 * quarters of its stalls over 10 ms (docs/performance.md, "The loop waits
 * for its own helpers").
 *
 * So the serving process can raise its helper threads' nice value (on Linux
 * nice is per thread): they still run whenever the loop has nothing to do,
 * but no longer take turns while it has work. With more than one core the
 * helpers run beside the loop instead, and a deprioritized helper would only
 * lose to other processes — and the loop sometimes waits for one (a
 * collection's parallel phase) — so `auto` applies it only while the process
 * is confined to one CPU. Threads start later too (libuv's pool on first use,
 * the estimate pool on the first large body) and the confinement may come
 * after start (`taskset -p`), so the threads are looked at again every
 * second; a thread is changed once, and only ever to yield more
 * (src/estimate/estimate-worker.ts sets its own). Linux only (elsewhere nice
 * is per process): without `/proc/self/task` this does nothing.
 */
import { readdirSync } from 'node:fs';
import { availableParallelism, getPriority, setPriority } from 'node:os';

/** TOLLGATE_HELPER_NICE: a nice value (0 leaves the threads alone), or `auto`. */
export type HelperNice = number | 'auto';

/** The nice value `auto` stands for on one CPU: the helpers then yield the core to the loop almost entirely. */
export const CONFINED_HELPER_NICE = 19;

/** How often new helper threads (and the CPUs the process may use) are looked at. */
const RESCAN_MS = 1_000;

/** The nice value the helper threads get under `setting` while the process may use `cpus` CPUs. */
export function helperNiceFor(setting: HelperNice, cpus: number): number {
  if (setting !== 'auto') return setting;
  return cpus === 1 ? CONFINED_HELPER_NICE : 0;
}

export interface HelperThreads {
  /** Stops looking at the threads (those already changed stay so). */
  stop(): void;
}

/**
 * Gives every thread of this process but the loop's at least the nice value
 * {@link helperNiceFor} says, now and as threads start. Call from the main
 * thread: its thread id is the process id.
 */
export function deprioritizeHelperThreads(setting: HelperNice, cpus: () => number = availableParallelism): HelperThreads {
  if (setting === 0 || process.platform !== 'linux') return { stop() {} };
  const done = new Set<number>();
  const scan = (): void => {
    const nice = helperNiceFor(setting, cpus());
    if (nice === 0) return;
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
