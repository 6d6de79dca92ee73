/**
 * Reconciliation results in PostgreSQL (replicas, TOLLGATE_DATABASE_URL):
 * the same store as SQLite's (src/storage/sqlite/reconciliations.ts), so the result of a run from any
 * host is the one every node's dashboard shows.
 */
import type { PgPool } from './open.js';
import { pgUnavailable, type TollgateError } from '../../domain/errors.js';
import {
  KEEP,
  LATEST_PER_PROVIDER,
  reconciliationColumns,
  storedReconciliation,
  type ReconciliationStore,
  type ReconciliationSummary,
} from '../reconciliations.js';

function unavailable(error: unknown): TollgateError {
  return pgUnavailable('Reconciliation results are kept in', error);
}

type Row = { id: number; createdAt: number; report: string };

/** Results in PostgreSQL. */
export function pgReconciliations<R extends ReconciliationSummary>(pool: PgPool): ReconciliationStore<R> {
  return {
    save: async (report) => {
      try {
        // One statement, so the insert and the retention commit together. Its parts see the table
        // as it was before the insert: the delete keeps the KEEP - 1 newest earlier results, and the
        // new one makes KEEP. They are counted, not computed from the id: identity values may skip
        // numbers (a rolled-back insert).
        const result = await pool.query<{ id: number }>(
          `WITH saved AS (
             INSERT INTO reconciliations (created_at, provider, since, until, differences, price_flags, report)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
           ), pruned AS (
             DELETE FROM reconciliations WHERE id < (
               SELECT min(id) FROM (SELECT id FROM reconciliations ORDER BY id DESC LIMIT $8) newest
             )
           )
           SELECT id FROM saved`,
          [...reconciliationColumns(report), KEEP - 1],
        );
        return result.rows[0]!.id;
      } catch (error) {
        throw unavailable(error);
      }
    },
    latest: async (provider) => {
      try {
        const result =
          provider === undefined
            ? await pool.query<Row>('SELECT id, created_at AS "createdAt", report FROM reconciliations ORDER BY id DESC LIMIT 1')
            : await pool.query<Row>('SELECT id, created_at AS "createdAt", report FROM reconciliations WHERE provider = $1 ORDER BY id DESC LIMIT 1', [
                provider,
              ]);
        return result.rows[0] === undefined ? undefined : storedReconciliation<R>(result.rows[0]);
      } catch (error) {
        throw unavailable(error);
      }
    },
    latestPerProvider: async () => {
      try {
        return (await pool.query<Row>(LATEST_PER_PROVIDER)).rows.map((row) => storedReconciliation<R>(row));
      } catch (error) {
        throw unavailable(error);
      }
    },
  };
}
