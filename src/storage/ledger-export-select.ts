/**
 * What a ledger export selects, the same list for both databases
 * (sqlite/ledger-export.ts, postgres/ledger-export.ts).
 */

/**
 * The exported columns: every ledger field (none is a secret; the ledger
 * holds no key material) plus the key's name and prefix and the tenant's
 * name. Listed, never `SELECT *`, so a column added later is exported only
 * once someone decides it may be. One list for both stores: `flag` reads a
 * boolean column as 0 or 1 (SQLite stores them so; PostgreSQL's are
 * `boolean`, postgres/ledger-export.ts casts them).
 */
export function ledgerExportSelect(flag: (column: string) => string): string {
  return `SELECT l.request_id, l.created_at, l.completed_at, l.key_id, k.name AS key_name, k.prefix AS key_prefix,
  l.tenant_id, t.name AS tenant_name, l.endpoint, l.model, ${flag('l.stream')} AS stream, l.status, l.http_status,
  l.est_prompt_tokens, l.est_completion_tokens, l.est_cost_micros,
  l.prompt_tokens, l.cached_tokens, l.cache_write_5m_tokens, l.cache_write_1h_tokens, l.completion_tokens, l.reasoning_tokens, l.cost_micros,
  ${flag('l.price_known')} AS price_known, l.usage_source, l.latency_ms, l.ttft_ms, l.upstream_request_id, l.error_code, l.end_user, l.tags, l.session`;
}
