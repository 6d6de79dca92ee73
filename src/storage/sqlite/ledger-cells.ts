/** A reconciliation's ledger sums (../ledger-cells.ts) from a node's SQLite file. */
import type { TollgateDatabase } from './open.js';
import { endpointCondition, type KeyDaySums, type LedgerCellSource } from '../ledger-cells.js';

const DAY_MS = 86_400_000;

/** The node's own SQLite ledger. */
export function sqliteLedgerCells(database: TollgateDatabase): LedgerCellSource {
  return {
    async sums(sinceMs, untilMs, provider = 'openai') {
      const ofProvider = endpointCondition(provider);
      // Joined from api_keys so each key's rows are read through ledger_key_time.
      const rows = database.sqlite
        .prepare(
          `SELECT l.created_at / ${DAY_MS} AS dayNumber, l.model AS model, k.name AS keyName, t.name AS tenantName,
             count(*) AS requests, coalesce(sum(l.prompt_tokens), 0) AS inputTokens, coalesce(sum(l.cached_tokens), 0) AS cachedInputTokens,
             coalesce(sum(coalesce(l.cache_write_5m_tokens, 0) + coalesce(l.cache_write_1h_tokens, 0)), 0) AS cacheWriteTokens,
             coalesce(sum(l.completion_tokens), 0) AS outputTokens, coalesce(sum(l.cost_micros), 0) AS costMicros
           FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= ? AND l.created_at < ?
           LEFT JOIN tenants t ON t.id = k.tenant_id
           WHERE l.status <> 'pending' AND ${ofProvider} AND coalesce(l.prompt_tokens, 0) + coalesce(l.completion_tokens, 0) > 0
           GROUP BY dayNumber, l.model, k.id
           ORDER BY dayNumber, l.model, k.id`,
        )
        .all(sinceMs, untilMs) as KeyDaySums[];
      const pending = database.sqlite
        .prepare(
          `SELECT count(*) FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= ? AND l.created_at < ? WHERE l.status = 'pending' AND ${ofProvider}`,
        )
        .pluck()
        .get(sinceMs, untilMs) as number;
      return { rows, pending };
    },
  };
}
