/**
 * The stored results of `tollgate reconcile` and of the proxy's scheduled
 * runs (table `reconciliations`): the newest of each provider is what the
 * dashboard and /metrics show. One interface, two stores: the node's
 * SQLite file (src/storage/sqlite/reconciliations.ts), or PostgreSQL on
 * replicas (src/storage/postgres/reconciliations.ts), so every node's
 * dashboard shows the same newest result. The report itself is
 * src/reconcile/'s: the store keeps it whole, as JSON, beside the columns
 * below.
 */

/** What the store reads of a report for its columns. */
export interface ReconciliationSummary {
  readonly generatedAt: number;
  readonly provider: string;
  readonly since: string;
  readonly until: string;
  readonly differences: number;
  readonly priceFlags: readonly unknown[];
}

/** A stored result. */
export interface StoredReconciliation<R extends ReconciliationSummary = ReconciliationSummary> {
  readonly id: number;
  readonly createdAt: number;
  readonly report: R;
}

/** Where results are kept: the last {@link KEEP}, older ones deleted as new ones arrive. */
export interface ReconciliationStore<R extends ReconciliationSummary = ReconciliationSummary> {
  /** Stores a result (dated by its `generatedAt`) and answers its id. */
  save(report: R): Promise<number>;
  /** The newest result (of `provider`'s bill when given), if any run was stored. */
  latest(provider?: string): Promise<StoredReconciliation<R> | undefined>;
  /** The newest result of each provider, by provider name. */
  latestPerProvider(): Promise<StoredReconciliation<R>[]>;
}

/** How many results are kept. */
export const KEEP = 50;

/** The columns both stores write, from a report. */
export function reconciliationColumns(report: ReconciliationSummary): [number, string, string, string, number, number, string] {
  return [report.generatedAt, report.provider, report.since, report.until, report.differences, report.priceFlags.length, JSON.stringify(report)];
}

/** The SELECT of the newest result per provider (same text on both backends; a small table: KEEP rows). */
export const LATEST_PER_PROVIDER =
  'SELECT id, created_at AS "createdAt", report FROM reconciliations WHERE id IN (SELECT max(id) FROM reconciliations GROUP BY provider) ORDER BY provider';

/** A stored row as a result (the report as it was saved). */
export function storedReconciliation<R extends ReconciliationSummary>(row: { id: number; createdAt: number; report: string }): StoredReconciliation<R> {
  return { id: row.id, createdAt: row.createdAt, report: JSON.parse(row.report) as R };
}
