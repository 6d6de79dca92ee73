/**
 * Retention on replicas (TOLLGATE_LEDGER_RETENTION_DAYS): raw ledger rows in
 * PostgreSQL older than N whole UTC days are deleted; the rollups, which hold
 * their sums, stay. Settled and refused rows only — a pending row is kept
 * until it settles.
 *
 * The horizon is recorded first (`ledger_retention`), and the shipper
 * (shipper.ts) never ships a row older than it: a pruned row shipped again
 * would be inserted again and counted twice. The shipper reads the horizon
 * FOR SHARE, so a pruning run waits for batches under way before it moves
 * the horizon, and their rows are then in PostgreSQL (and pruned, not
 * re-inserted). A node whose outbox still holds rows older than the horizon
 * (down for longer than the retention) drops them: choose a retention far
 * longer than any outage.
 */
import type { PgPool } from './open.js';
import { addDays, calendarDay, dayStartMs } from '../../domain/calendar.js';

/** Only one node prunes at a time ("tollgate-prune" as a lock id). */
const PRUNE_LOCK = '7813575385137752100';

/** The start of the first UTC day kept. */
export function retentionHorizon(days: number, now: number): number {
  return dayStartMs(addDays(calendarDay(now), -days));
}

/** Moves the horizon and deletes the rows before it, in batches; returns how many were deleted (0 when another node is pruning). */
export async function pruneLedger(pool: PgPool, days: number, now: number, batch = 5000): Promise<number> {
  const horizon = retentionHorizon(days, now);
  const client = await pool.connect();
  try {
    const locked = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [PRUNE_LOCK]);
    if (locked.rows[0]?.ok !== true) return 0;
    try {
      await client.query(
        `INSERT INTO ledger_retention (id, pruned_before) VALUES (1, $1)
         ON CONFLICT (id) DO UPDATE SET pruned_before = greatest(ledger_retention.pruned_before, excluded.pruned_before)`,
        [horizon],
      );
      let deleted = 0;
      for (;;) {
        const result = await client.query(`DELETE FROM ledger WHERE ctid IN (SELECT ctid FROM ledger WHERE created_at < $1 AND status <> 'pending' LIMIT $2)`, [
          horizon,
          batch,
        ]);
        deleted += result.rowCount ?? 0;
        if ((result.rowCount ?? 0) < batch) return deleted;
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [PRUNE_LOCK]);
    }
  } finally {
    client.release();
  }
}
