/**
 * Loaded into a server by bench/targets.ts (`--import`, after tsx): notes
 * every event-loop stall over 10 ms (a 2 ms timer that fired that much late)
 * and every GC pause of 1 ms or more, on the same performance clock, and
 * writes both as JSON to TOLLGATE_BENCH_STALL_FILE when the process exits, so
 * the bench can say what the worst stall was and whether a collection caused
 * it. Inert without that variable.
 */
import { writeFileSync } from 'node:fs';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.TOLLGATE_BENCH_STALL_FILE;
if (file !== undefined && file !== '') {
  const TICK_MS = 2;
  const stalls: { at: number; ms: number }[] = [];
  const gcs: { at: number; ms: number; kind: string }[] = [];
  let last = performance.now();
  let ticks = 0;
  setInterval(() => {
    const now = performance.now();
    const late = now - last - TICK_MS;
    if (late > 10) stalls.push({ at: last + TICK_MS, ms: late });
    last = now;
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
