/**
 * One ledger row, read by its request id for the key that made the request
 * (`GET /v1/tollgate/requests/{id}`, docs/ledger-and-exports.md "Receipts").
 * SQLite: the node's file (a primary-key lookup, cheap enough for the event
 * loop). PostgreSQL: the node's own file first — the row of a request this
 * node answered is there before the shipper moves it — then every node's
 * shipped rows. Another key's request reads as absent.
 */

/** A ledger row as its key may read it (the columns of src/storage/sqlite/schema.ts, `ledger`). */
export interface LedgerEntry {
  readonly requestId: string;
  readonly keyId: string;
  readonly createdAt: number;
  readonly completedAt: number | null;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: boolean;
  /** `pending` until settled, then its outcome (src/storage/ledger.ts, FinalStatus), or `rejected`/`invalid_request`. */
  readonly status: string;
  readonly httpStatus: number | null;
  readonly estPromptTokens: number;
  readonly estCompletionTokens: number;
  /** What the request held while it ran (its reservation), µUSD. */
  readonly estCostMicros: number;
  readonly promptTokens: number | null;
  readonly cachedTokens: number | null;
  readonly completionTokens: number | null;
  readonly reasoningTokens: number | null;
  readonly audioPromptTokens: number | null;
  readonly audioCompletionTokens: number | null;
  readonly cacheWrite5mTokens: number | null;
  readonly cacheWrite1hTokens: number | null;
  readonly serviceTier: string | null;
  readonly toolCostMicros: number | null;
  /** What it cost, µUSD; null while pending. */
  readonly costMicros: number | null;
  readonly priceKnown: boolean;
  readonly usageSource: string | null;
  readonly latencyMs: number | null;
  readonly ttftMs: number | null;
  readonly upstreamRequestId: string | null;
  readonly upstream: string | null;
  readonly errorCode: string | null;
  readonly endUser: string | null;
}

export interface RequestReads {
  /** The row of `requestId` when `keyId` made it; undefined otherwise. */
  entryOf(keyId: string, requestId: string): Promise<LedgerEntry | undefined>;
}

/** The SELECT list both backends read a row with (their column names are the same). */
export const ENTRY_COLUMNS = `request_id AS "requestId", key_id AS "keyId", created_at AS "createdAt", completed_at AS "completedAt",
  endpoint, model, stream, status, http_status AS "httpStatus", est_prompt_tokens AS "estPromptTokens",
  est_completion_tokens AS "estCompletionTokens", est_cost_micros AS "estCostMicros", prompt_tokens AS "promptTokens",
  cached_tokens AS "cachedTokens", completion_tokens AS "completionTokens", reasoning_tokens AS "reasoningTokens",
  audio_prompt_tokens AS "audioPromptTokens", audio_completion_tokens AS "audioCompletionTokens",
  cache_write_5m_tokens AS "cacheWrite5mTokens", cache_write_1h_tokens AS "cacheWrite1hTokens", service_tier AS "serviceTier",
  tool_cost_micros AS "toolCostMicros", cost_micros AS "costMicros", price_known AS "priceKnown", usage_source AS "usageSource",
  latency_ms AS "latencyMs", ttft_ms AS "ttftMs", upstream_request_id AS "upstreamRequestId", upstream, error_code AS "errorCode",
  end_user AS "endUser"`;

/** A row as read by either backend: SQLite's booleans are 0/1. */
export function toEntry(row: Record<string, unknown>): LedgerEntry {
  return { ...(row as unknown as LedgerEntry), stream: Boolean(row.stream), priceKnown: Boolean(row.priceKnown) };
}
