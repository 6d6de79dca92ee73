/** A reconciliation's ledger sums (../ledger-cells.ts) from PostgreSQL's ledger. */
import type pg from 'pg';
import type { PgPool } from './open.js';
import { pgUnavailable } from '../../domain/errors.js';
import { endpointCondition, type KeyDaySums, type LedgerCellSource } from '../ledger-cells.js';

const DAY_MS = 86_400_000;

/**
 * PostgreSQL's ledger (replicas): every node's shipped rows, summed as the
 * SQLite query does (integer division of bigints truncates as SQLite's does;
 * names compare bytewise, as SQLite's BINARY collation). Not answering is
 * `ledger_unavailable`, never the node's own share.
 */
export function postgresLedgerCells(pool: PgPool): LedgerCellSource {
  return {
    async sums(sinceMs, untilMs, provider = 'openai') {
      const ofProvider = endpointCondition(provider);
      try {
        const [sums, pending] = await Promise.all([
          pool.query<KeyDaySums & pg.QueryResultRow>(
            `SELECT l.created_at / ${DAY_MS} AS "dayNumber", l.model AS model, k.name AS "keyName", t.name AS "tenantName",
               count(*) AS requests, coalesce(sum(l.prompt_tokens), 0) AS "inputTokens", coalesce(sum(l.cached_tokens), 0) AS "cachedInputTokens",
               coalesce(sum(coalesce(l.cache_write_5m_tokens, 0) + coalesce(l.cache_write_1h_tokens, 0)), 0) AS "cacheWriteTokens",
               coalesce(sum(l.completion_tokens), 0) AS "outputTokens", coalesce(sum(l.cost_micros), 0) AS "costMicros"
             FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= $1 AND l.created_at < $2
             LEFT JOIN tenants t ON t.id = k.tenant_id
             WHERE l.status <> 'pending' AND ${ofProvider} AND coalesce(l.prompt_tokens, 0) + coalesce(l.completion_tokens, 0) > 0
             GROUP BY 1, l.model, k.id, t.name
             ORDER BY 1, l.model COLLATE "C", k.id COLLATE "C"`,
            [sinceMs, untilMs],
          ),
          // Through the partial index on pending rows.
          pool.query<{ n: number }>(
            `SELECT count(*) AS n FROM ledger l WHERE l.status = 'pending' AND l.created_at >= $1 AND l.created_at < $2 AND ${ofProvider}`,
            [sinceMs, untilMs],
          ),
        ]);
        return { rows: sums.rows, pending: pending.rows[0]?.n ?? 0 };
      } catch (error) {
        throw pgUnavailable('reconcile reads the ledger from', error);
      }
    },
  };
}
