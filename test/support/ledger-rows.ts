/**
 * Many settled ledger rows on one day, inserted directly in one transaction
 * (for export tests and benchmarks: the LedgerWriter and its rollups are not
 * what they measure). Rows belong to the database's first key.
 */
import type Database from 'better-sqlite3';

export function fillLedger(sqlite: Database.Database, options: { rows: number; day: string }): void {
  const key = sqlite.prepare('SELECT id, tenant_id AS tenantId FROM api_keys ORDER BY created_at LIMIT 1').get() as
    { id: string; tenantId: string | null } | undefined;
  if (key === undefined) throw new Error('fillLedger needs a key in the database');
  const start = Date.parse(`${options.day}T00:00:00Z`);
  const step = 86_400_000 / options.rows;
  const insert = sqlite.prepare(`INSERT INTO ledger (request_id, key_id, tenant_id, created_at, completed_at, endpoint, model, stream, status, http_status,
      est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, cost_micros,
      price_known, usage_source, latency_ms, ttft_ms, upstream_request_id, error_code)
    VALUES (?, ?, ?, ?, ?, 'chat', ?, ?, 'ok', 200, 120, 1024, 650, ?, 0, ?, 0, ?, 1, 'reported', 850, ?, ?, NULL)`);
  sqlite.transaction(() => {
    for (let i = 0; i < options.rows; i += 1) {
      const createdAt = start + Math.floor(i * step);
      insert.run(
        `fill-${options.day}-${i}`,
        key.id,
        key.tenantId,
        createdAt,
        createdAt + 850,
        i % 3 === 0 ? 'gpt-4o' : 'gpt-4o-mini',
        i % 2,
        100 + (i % 500),
        20 + (i % 300),
        90 + (i % 1000),
        i % 2 === 1 ? 120 : null,
        `chatcmpl-${i}`,
      );
    }
  })();
}
