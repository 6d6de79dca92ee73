/** The stored results of `tollgate reconcile` (table `reconciliations`): the newest is what the dashboard shows. */
import type { TollgateDatabase } from '../db/open.js';
import type { ReconcileReport } from './compare.js';

/** A stored result; `pending` is the ledger's unsettled rows in the range when it ran. */
export interface StoredReconciliation {
  readonly id: number;
  readonly createdAt: number;
  readonly report: ReconcileReport & { readonly pending?: number };
}

/** How many results are kept (older ones are deleted as new ones arrive). */
const KEEP = 50;

export function saveReconciliation(database: TollgateDatabase, report: ReconcileReport & { readonly pending?: number }): number {
  const sqlite = database.sqlite;
  return sqlite.transaction(() => {
    const id = sqlite
      .prepare('INSERT INTO reconciliations (created_at, provider, since, until, differences, price_flags, report) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id')
      .pluck()
      .get(report.generatedAt, report.provider, report.since, report.until, report.differences, report.priceFlags.length, JSON.stringify(report)) as number;
    sqlite.prepare('DELETE FROM reconciliations WHERE id <= ?').run(id - KEEP);
    return id;
  })();
}

export function latestReconciliation(database: TollgateDatabase): StoredReconciliation | undefined {
  const row = database.sqlite.prepare('SELECT id, created_at AS createdAt, report FROM reconciliations ORDER BY id DESC LIMIT 1').get() as
    { id: number; createdAt: number; report: string } | undefined;
  if (row === undefined) return undefined;
  return { id: row.id, createdAt: row.createdAt, report: JSON.parse(row.report) as StoredReconciliation['report'] };
}
