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
  /** Prompt tokens written to the cache (5-minute and 1-hour writes together). */
  readonly cacheWriteTokens: number;
  readonly outputTokens: number;
  readonly costMicros: number;
}

/**
 * Whose bill a row is on: Anthropic's rows are those of its Messages API
 * (`endpoint = 'messages'`, Message Batches included), OpenAI's every other.
 */
export type BillingProvider = 'openai' | 'anthropic';

/** The SQL condition on the ledger's `l.endpoint` that selects a provider's rows (same text on both backends). */
export function endpointCondition(provider: BillingProvider): string {
  return provider === 'anthropic' ? `l.endpoint = 'messages'` : `l.endpoint <> 'messages'`;
}

/**
 * Where the ledger's sums are read: the node's SQLite file, or PostgreSQL on
 * a replica (every node's rows). Both return the same sums in the same order
 * (day, model, key id, bytewise) for the same rows; the mapping to cells is
 * src/reconcile/ledger-cells.ts's alone.
 */
export interface LedgerCellSource {
  /**
   * Settled rows of `provider` (default openai) that billed tokens, created in [sinceMs, untilMs),
   * summed per UTC day, model and key; and that provider's rows still pending there.
   */
  sums(sinceMs: number, untilMs: number, provider?: BillingProvider): Promise<{ rows: KeyDaySums[]; pending: number }>;
}
