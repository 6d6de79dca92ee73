/**
 * The raw ledger rows of a period, for exports (`tollgate ledger export`,
 * `/admin/api/ledger.csv` and `.ndjson`): read page by page in constant
 * memory, whichever database holds them. The CSV and NDJSON bytes are
 * written by src/reports/export.ts, the same for both.
 *
 * SQLite: the node's own file, through a read-only connection of the export's
 * own (one snapshot, never blocking the ledger writer). PostgreSQL: every
 * node's shipped rows, in short keyset pages. Both give the same rows with
 * the same columns (test/integration/storage/ledger-export.contract.test.ts).
 */

/** Which ledger rows to export: created in [sinceMs, untilMs), optionally of one key or tenant (by id). */
export interface LedgerExportQuery {
  readonly sinceMs: number;
  readonly untilMs: number;
  readonly keyId?: string | undefined;
  readonly tenantId?: string | undefined;
}

/** A row as both stores return it (booleans as 0 or 1). */
export interface LedgerExportRow {
  request_id: string;
  created_at: number;
  completed_at: number | null;
  key_id: string;
  key_name: string;
  key_prefix: string;
  tenant_id: string | null;
  tenant_name: string | null;
  endpoint: string;
  model: string;
  stream: number;
  status: string;
  http_status: number | null;
  est_prompt_tokens: number;
  est_completion_tokens: number;
  est_cost_micros: number;
  prompt_tokens: number | null;
  cached_tokens: number | null;
  cache_write_5m_tokens: number | null;
  cache_write_1h_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  cost_micros: number | null;
  price_known: number;
  usage_source: string | null;
  latency_ms: number | null;
  ttft_ms: number | null;
  upstream_request_id: string | null;
  error_code: string | null;
  end_user: string | null;
  tags: string | null;
  session: string | null;
}

/** Where a ledger export reads its rows. */
export interface LedgerExportSource {
  /**
   * The rows created in the period (and of its key or tenant), each turned
   * into text by `line`, in chunks of a page of lines: the next page is read
   * only when the consumer asks for the next chunk, and the first before the
   * first chunk is given (an export that cannot start fails there). Empty
   * pages are not yielded.
   */
  lines(query: LedgerExportQuery, line: (row: LedgerExportRow) => string): AsyncGenerator<string, void, undefined>;
}
