/**
 * Loaded into a server by bench/targets.ts (`--import`, after tsx): notes
 * every event-loop stall over 10 ms (a 2 ms timer that fired that much late)
 * and every GC pause of 1 ms or more, on the same performance clock, and
 * writes both as JSON to TOLLGATE_BENCH_STALL_FILE when the process exits, so
 * the bench can say what the worst stall was and whether a collection caused
 * it. Inert without that variable.
 *
 * On Linux each stall also says how long the loop's thread ran in it and how
 * long it was ready but waited for the core (`/proc/thread-self/schedstat`,
 * read every tick): pinned to one core, the process's other threads (V8's
 * collector and compiler helpers, workers) take turns with the loop, and the
 * wait is their share of the stall (docs/performance.md).
 *
 * The event loop's thread only: loaded with `--import`, the probe is loaded
 * into every worker thread as well, and stays inert there.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const file = process.env.TOLLGATE_BENCH_STALL_FILE;
// Worker threads inherit node's --import: in Tollgate's workers (the checkpointer, the read and estimate
// workers) the probe would tick every 2 ms on the loop's core too, and race the loop's writing of the file.
if (file !== undefined && file !== '' && isMainThread) {
  const TICK_MS = 2;
  // `hrUs`: the stall's start on the monotonic clock in µs, the clock of a `--cpu-prof` profile's samples.
  const stalls: { at: number; ms: number; hrUs: number; runMs?: number; waitMs?: number }[] = [];
  /** [ran, waited for the core] in ms since the thread started; undefined where the kernel does not say. */
  const schedstat = (): [number, number] | undefined => {
    try {
      const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number);
      return [run! / 1e6, wait! / 1e6];
    } catch {
      return undefined;
    }
  };
  let lastSched = schedstat();
  const gcs: { at: number; ms: number; kind: string }[] = [];
  let last = performance.now();
  let ticks = 0;
  setInterval(() => {
    const now = performance.now();
    const late = now - last - TICK_MS;
    const sched = lastSched === undefined ? undefined : schedstat();
    if (late > 10) {
      const hrUs = Number(process.hrtime.bigint() / 1000n) - Math.round(late * 1000);
      const split = sched === undefined || lastSched === undefined ? {} : { runMs: sched[0] - lastSched[0], waitMs: sched[1] - lastSched[1] };
      stalls.push({ at: last + TICK_MS, ms: late, hrUs, ...split });
    }
    last = now;
    lastSched = sched;
    ticks += 1;
  }, TICK_MS).unref();
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration < 1) continue;
      const kind = (entry as { detail?: { kind?: number } | null }).detail?.kind ?? -1;
      gcs.push({ at: entry.startTime, ms: entry.duration, kind: kinds[kind] ?? `gc ${kind}` });
    }
  }).observe({ entryTypes: ['gc'] });
  process.on('exit', () => writeFileSync(file, JSON.stringify({ ticks, stalls, gcs })));
}
