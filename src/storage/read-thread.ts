/**
 * The thread a node's SQLite reports and dashboard reads run on
 * (sqlite/read-worker.ts): better-sqlite3 answers synchronously, so a read
 * that sums a month of rows would hold the event loop every request shares.
 * Its owner (the composition root) starts it with the node and closes it on
 * shutdown; the spend and dashboard reads are given it (spend-reads.ts,
 * dashboard-reads.ts).
 */
import type { Backend } from './backend.js';
import { ReadWorker } from './sqlite/read-worker.js';

/**
 * A read worker over the backend's SQLite file; none on PostgreSQL (its reads
 * wait on the network, not on the event loop) or for an in-memory database
 * (a second connection would open another, empty one).
 */
export function openReadWorker(backend: Backend): ReadWorker | undefined {
  if (backend.kind === 'postgres' || backend.database.path === ':memory:') return undefined;
  return new ReadWorker(backend.database.path);
}
