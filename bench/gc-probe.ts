/**
 * Loaded into a proxy by bench/streams.ts (`--import`, after tsx, with
 * `--expose-gc`): on SIGUSR2 it runs a full collection and appends the
 * process's memory after it, as a JSON line, to TOLLGATE_BENCH_GC_FILE. Memory
 * per open stream is then what the streams keep alive, not garbage that the
 * collector has not reached yet. Inert without that variable.
 */
import { appendFileSync } from 'node:fs';

const file = process.env.TOLLGATE_BENCH_GC_FILE;
const gc = (globalThis as { gc?: () => void }).gc;
if (file !== undefined && file !== '') {
  if (gc === undefined) throw new Error('bench/gc-probe.ts needs node --expose-gc');
  process.on('SIGUSR2', () => {
    gc();
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
    appendFileSync(file, `${JSON.stringify({ rss, heapUsed, external, arrayBuffers })}\n`);
  });
}
