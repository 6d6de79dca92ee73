/**
 * The ledger's side of a reconciliation (src/reconcile/ledger-cells.ts):
 * billed requests summed per UTC day, model and key, from the raw rows
 * through the per-key time index (the daily rollups follow
 * TOLLGATE_TIMEZONE, the provider's days are UTC). SQLite reads the node's
 * file, PostgreSQL every node's shipped rows.
 */

/** One key's billed requests of one UTC day and model, summed (what either store's query returns). */
export interface KeyDaySums {
  /** Days since the epoch (UTC). */
  readonly dayNumber: number;
  readonly model: string;
  readonly keyName: string;
  readonly tenantName: string | null;
  readonly requests: number;
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
  readonly outputTokens: number;
  readonly costMicros: number;
}

/**
 * Where the ledger's sums are read: the node's SQLite file, or PostgreSQL on
 * a replica (every node's rows). Both return the same sums in the same order
 * (day, model, key id, bytewise) for the same rows; the mapping to cells is
 * src/reconcile/ledger-cells.ts's alone.
 */
export interface LedgerCellSource {
  /** Settled rows that billed tokens, created in [sinceMs, untilMs), summed per UTC day, model and key; and the rows still pending there. */
  sums(sinceMs: number, untilMs: number): Promise<{ rows: KeyDaySums[]; pending: number }>;
}
