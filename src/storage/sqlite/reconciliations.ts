/** Reconciliation results in the node's SQLite file (one host, or `--db`): the ReconciliationStore of src/storage/reconciliations.ts. */
import type { TollgateDatabase } from './open.js';
import {
  KEEP,
  LATEST_PER_PROVIDER,
  reconciliationColumns,
  storedReconciliation,
  type ReconciliationStore,
  type ReconciliationSummary,
} from '../reconciliations.js';

type Row = { id: number; createdAt: number; report: string };

export function sqliteReconciliations<R extends ReconciliationSummary>(database: TollgateDatabase): ReconciliationStore<R> {
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
    latest: async (provider) => {
      const row = (
        provider === undefined
          ? sqlite.prepare('SELECT id, created_at AS createdAt, report FROM reconciliations ORDER BY id DESC LIMIT 1').get()
          : sqlite.prepare('SELECT id, created_at AS createdAt, report FROM reconciliations WHERE provider = ? ORDER BY id DESC LIMIT 1').get(provider)
      ) as Row | undefined;
      return row === undefined ? undefined : storedReconciliation<R>(row);
    },
    latestPerProvider: async () => (sqlite.prepare(LATEST_PER_PROVIDER).all() as Row[]).map((row) => storedReconciliation<R>(row)),
  };
}
