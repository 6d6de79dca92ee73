/**
 * The ledger's side of a reconciliation: billed requests summed per UTC day
 * (as the provider buckets them, whatever TOLLGATE_TIMEZONE says), model and
 * key, then mapped to the provider's projects. Read from the raw rows
 * through the per-key time index (the daily rollups follow
 * TOLLGATE_TIMEZONE and the hourly ones have no model).
 *
 * Counted: settled rows that billed tokens (the provider does not count
 * requests it refused or that never reached it). Rows still pending are
 * counted apart: in flight, or left by a crash, they are not on either bill yet.
 *
 * On a replica the rows are read from PostgreSQL (every node's), with the
 * same query over the same indexes: {@link LedgerCellSource}.
 */
import type pg from 'pg';
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import type { PgPool } from '../storage/postgres/open.js';
import { pgUnavailable } from '../domain/errors.js';
import type { LedgerCell } from './compare.js';
import type { DayRange } from './provider.js';

const DAY_MS = 86_400_000;

/** Which provider project a Tollgate key's requests are billed to (the config file's `reconcile.projects`). */
export interface ProjectMapping {
  /** By key name, first. */
  readonly keys?: Readonly<Record<string, string>>;
  /** By tenant name, next. */
  readonly tenants?: Readonly<Record<string, string>>;
  /** Every other key: the project of TOLLGATE_UPSTREAM_KEY. */
  readonly default?: string;
}

/** Whether the mapping says anything (without one, cells are compared by day and model only). */
export function hasProjectMapping(mapping: ProjectMapping | undefined): mapping is ProjectMapping {
  if (mapping === undefined) return false;
  return mapping.default !== undefined || Object.keys(mapping.keys ?? {}).length > 0 || Object.keys(mapping.tenants ?? {}).length > 0;
}

/** The project of a key, or `(unmapped)`. */
function projectOf(mapping: ProjectMapping, keyName: string, tenantName: string | null): string {
  const byKey = mapping.keys?.[keyName];
  if (byKey !== undefined) return byKey;
  const byTenant = tenantName === null ? undefined : mapping.tenants?.[tenantName];
  return byTenant ?? mapping.default ?? '(unmapped)';
}

function utcDayStartMs(day: string): number {
  return Date.parse(`${day}T00:00:00Z`);
}

/** One key's billed requests of one UTC day and model, summed (what either store's query returns). */
interface KeyDaySums {
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
 * {@link readLedgerCells}'s alone.
 */
export interface LedgerCellSource {
  /** Settled rows that billed tokens, created in [sinceMs, untilMs), summed per UTC day, model and key; and the rows still pending there. */
  sums(sinceMs: number, untilMs: number): Promise<{ rows: KeyDaySums[]; pending: number }>;
}

/** The node's own SQLite ledger. */
export function sqliteLedgerCells(database: TollgateDatabase): LedgerCellSource {
  return {
    async sums(sinceMs, untilMs) {
      // Joined from api_keys so each key's rows are read through ledger_key_time.
      const rows = database.sqlite
        .prepare(
          `SELECT l.created_at / ${DAY_MS} AS dayNumber, l.model AS model, k.name AS keyName, t.name AS tenantName,
             count(*) AS requests, coalesce(sum(l.prompt_tokens), 0) AS inputTokens, coalesce(sum(l.cached_tokens), 0) AS cachedInputTokens,
             coalesce(sum(l.completion_tokens), 0) AS outputTokens, coalesce(sum(l.cost_micros), 0) AS costMicros
           FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= ? AND l.created_at < ?
           LEFT JOIN tenants t ON t.id = k.tenant_id
           WHERE l.status <> 'pending' AND coalesce(l.prompt_tokens, 0) + coalesce(l.completion_tokens, 0) > 0
           GROUP BY dayNumber, l.model, k.id
           ORDER BY dayNumber, l.model, k.id`,
        )
        .all(sinceMs, untilMs) as KeyDaySums[];
      const pending = database.sqlite
        .prepare(`SELECT count(*) FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= ? AND l.created_at < ? WHERE l.status = 'pending'`)
        .pluck()
        .get(sinceMs, untilMs) as number;
      return { rows, pending };
    },
  };
}

/**
 * PostgreSQL's ledger (replicas): every node's shipped rows, summed as the
 * SQLite query does (integer division of bigints truncates as SQLite's does;
 * names compare bytewise, as SQLite's BINARY collation). Not answering is
 * `ledger_unavailable`, never the node's own share.
 */
export function pgLedgerCells(pool: PgPool): LedgerCellSource {
  return {
    async sums(sinceMs, untilMs) {
      try {
        const [sums, pending] = await Promise.all([
          pool.query<KeyDaySums & pg.QueryResultRow>(
            `SELECT l.created_at / ${DAY_MS} AS "dayNumber", l.model AS model, k.name AS "keyName", t.name AS "tenantName",
               count(*) AS requests, coalesce(sum(l.prompt_tokens), 0) AS "inputTokens", coalesce(sum(l.cached_tokens), 0) AS "cachedInputTokens",
               coalesce(sum(l.completion_tokens), 0) AS "outputTokens", coalesce(sum(l.cost_micros), 0) AS "costMicros"
             FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= $1 AND l.created_at < $2
             LEFT JOIN tenants t ON t.id = k.tenant_id
             WHERE l.status <> 'pending' AND coalesce(l.prompt_tokens, 0) + coalesce(l.completion_tokens, 0) > 0
             GROUP BY 1, l.model, k.id, t.name
             ORDER BY 1, l.model COLLATE "C", k.id COLLATE "C"`,
            [sinceMs, untilMs],
          ),
          // Through the partial index on pending rows.
          pool.query<{ n: number }>(`SELECT count(*) AS n FROM ledger WHERE status = 'pending' AND created_at >= $1 AND created_at < $2`, [sinceMs, untilMs]),
        ]);
        return { rows: sums.rows, pending: pending.rows[0]?.n ?? 0 };
      } catch (error) {
        throw pgUnavailable('reconcile reads the ledger from', error);
      }
    },
  };
}

/** The ledger's cells over whole UTC days; `pending`: rows in the range not settled yet. */
export async function readLedgerCells(
  source: LedgerCellSource,
  range: DayRange,
  mapping: ProjectMapping | undefined,
): Promise<{ cells: LedgerCell[]; pending: number }> {
  const sinceMs = utcDayStartMs(range.since);
  const untilMs = utcDayStartMs(range.until) + DAY_MS;
  const { rows, pending } = await source.sums(sinceMs, untilMs);
  const mapped = hasProjectMapping(mapping) ? mapping : undefined;
  const cells = rows.map((row): LedgerCell => ({
    day: new Date(row.dayNumber * DAY_MS).toISOString().slice(0, 10),
    model: row.model,
    project: mapped === undefined ? null : projectOf(mapped, row.keyName, row.tenantName),
    requests: row.requests,
    inputTokens: row.inputTokens,
    cachedInputTokens: row.cachedInputTokens,
    outputTokens: row.outputTokens,
    costMicros: row.costMicros,
  }));
  return { cells, pending };
}
