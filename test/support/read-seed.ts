/**
 * The same keys, ledger rows and rollups in either backend, for the read
 * contracts (test/integration/storage/*-reads.contract.test.ts).
 *
 * The rows are written into the node's own SQLite file by the real writer
 * (which keeps every rollup in the same transaction as the rows). On
 * PostgreSQL the file's keys, tenants, ledger rows and rollup rows are then
 * copied into PostgreSQL's tables of the same names and columns, as a node
 * that has shipped everything leaves them, by plain INSERTs: the shipper's
 * own code is not what these suites test.
 */
import type { Backend } from '../../src/storage/backend.js';
import type { TollgateDatabase } from '../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter as LedgerWriter } from '../../src/storage/sqlite/ledger-writer.js';

/** What the seed is written with: the node's file, its key store and its ledger writer (flushed and closed after). */
export interface SeedTools {
  readonly database: TollgateDatabase;
  readonly store: KeyStore;
  readonly writer: LedgerWriter;
}

/** The tables PostgreSQL reads for reports, the dashboard and exports, parents first. */
const SHARED_TABLES = [
  'tenants',
  'api_keys',
  'ledger',
  'rollup_names',
  'rollups_daily',
  'rollups_daily_total',
  'rollups_hourly',
  'rollups_monthly',
  'rollups_lifetime',
  'rollups_end_users',
  'rollups_tags',
];

/** Columns only a node's file has (the writer's bookkeeping). */
const FILE_ONLY_COLUMNS = new Set(['rollup_exact']);

/** Rows per INSERT: far under PostgreSQL's 65,535 parameters for the widest table. */
const BATCH_ROWS = 1000;

/** Writes the seed into the backend's file and, on PostgreSQL, copies what it wrote there. */
export async function seedBackend(backend: Backend, seed: (tools: SeedTools) => Promise<void>, now?: () => number): Promise<void> {
  const { database } = backend;
  const writer = new LedgerWriter(database);
  await seed({ database, store: new KeyStore(database, now), writer }).finally(() => writer.flush());
  if (!writer.close()) throw new Error('the seed could not be written');
  if (backend.kind === 'postgres') await copyToPostgres(backend);
}

async function copyToPostgres(backend: Extract<Backend, { kind: 'postgres' }>): Promise<void> {
  const sqlite = backend.database.sqlite;
  // Children first: what an earlier seed copied is replaced, not added to.
  for (const table of [...SHARED_TABLES].reverse()) await backend.pool.query(`DELETE FROM ${table}`);
  for (const table of SHARED_TABLES) {
    const columns = (sqlite.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>)
      .map((column) => column.name)
      .filter((name) => !FILE_ONLY_COLUMNS.has(name));
    const rows = sqlite
      .prepare(`SELECT ${columns.join(', ')} FROM ${table}`)
      .raw()
      .all() as unknown[][];
    for (let start = 0; start < rows.length; start += BATCH_ROWS) {
      const batch = rows.slice(start, start + BATCH_ROWS);
      const values: unknown[] = [];
      const tuples = batch.map((row) => `(${row.map((cell) => `$${values.push(cell)}`).join(', ')})`);
      // Booleans are 0/1 in the file; PostgreSQL reads the text '0'/'1' as false/true.
      await backend.pool.query(
        `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`,
        values.map((value) => (typeof value === 'number' ? String(value) : value)),
      );
    }
  }
}
