/**
 * The stored results of `tollgate reconcile` (table `reconciliations`): the
 * newest is what the dashboard shows. One interface, two stores: the node's
 * SQLite file (here), or PostgreSQL on replicas (pg-store.ts), so every
 * node's dashboard shows the same newest result.
 */
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import type { ReconcileReport } from './compare.js';

/** What a run stores; `pending` is the ledger's unsettled rows in the range when it ran. */
export type ReconciliationReport = ReconcileReport & { readonly pending?: number };

/** A stored result. */
export interface StoredReconciliation {
  readonly id: number;
  readonly createdAt: number;
  readonly report: ReconciliationReport;
}

/** Where results are kept: the last {@link KEEP}, older ones deleted as new ones arrive. */
export interface ReconciliationStore {
  /** Stores a result (dated by its `generatedAt`) and answers its id. */
  save(report: ReconciliationReport): Promise<number>;
  /** The newest result, if any run was stored. */
  latest(): Promise<StoredReconciliation | undefined>;
}

/** How many results are kept. */
export const KEEP = 50;

/** The columns both stores write, from a report. */
export function reconciliationColumns(report: ReconciliationReport): [number, string, string, string, number, number, string] {
  return [report.generatedAt, report.provider, report.since, report.until, report.differences, report.priceFlags.length, JSON.stringify(report)];
}

export function storedReconciliation(row: { id: number; createdAt: number; report: string }): StoredReconciliation {
  return { id: row.id, createdAt: row.createdAt, report: JSON.parse(row.report) as ReconciliationReport };
}

/** Results in the node's SQLite file (one host, or `--db`). */
export function sqliteReconciliations(database: TollgateDatabase): ReconciliationStore {
  const sqlite = database.sqlite;
  return {
    save: async (report) =>
      sqlite.transaction(() => {
        const id = sqlite
          .prepare(
            'INSERT INTO reconciliations (created_at, provider, since, until, differences, price_flags, report) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id',
          )
          .pluck()
          .get(...reconciliationColumns(report)) as number;
        sqlite.prepare('DELETE FROM reconciliations WHERE id <= ?').run(id - KEEP);
        return id;
      })(),
    latest: async () => {
      const row = sqlite.prepare('SELECT id, created_at AS createdAt, report FROM reconciliations ORDER BY id DESC LIMIT 1').get() as
        { id: number; createdAt: number; report: string } | undefined;
      return row === undefined ? undefined : storedReconciliation(row);
    },
  };
}
