/**
 * Loaded into a proxy by bench/floor.ts (`--import`): counts the bytes its event loop's heap has
 * allocated so far, a count that does not move with the machine's speed (docs/performance.md,
 * "The floor"). On SIGUSR2 it writes the running total to TOLLGATE_BENCH_ALLOC_FILE as JSON
 * (`{ "bytes": n }`). Inert without that variable.
 *
 * Allocated bytes are what the heap grew by between collections: for each collection V8 reports
 * (`v8.GCProfiler`), its heap before it less the heap after the one before, and since the last one
 * the heap now less the heap it left. Worker threads have heaps of their own and are not counted.
 */
import { writeFileSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';

const file = process.env.TOLLGATE_BENCH_ALLOC_FILE;
if (file !== undefined && file !== '') {
  let bytes = 0;
  let heapAfterLast = getHeapStatistics().used_heap_size;
  let profiler = new GCProfiler();
  profiler.start();
  process.on('SIGUSR2', () => {
    for (const gc of profiler.stop()?.statistics ?? []) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - heapAfterLast;
      heapAfterLast = gc.afterGC.heapStatistics.usedHeapSize;
    }
    profiler = new GCProfiler();
    profiler.start();
    const now = getHeapStatistics().used_heap_size;
    bytes += now - heapAfterLast;
    heapAfterLast = now;
    writeFileSync(file, JSON.stringify({ bytes }));
  });
}
