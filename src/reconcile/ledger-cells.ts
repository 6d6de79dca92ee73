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
 */
import type { TollgateDatabase } from '../db/open.js';
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

/** The ledger's cells over whole UTC days; `pending`: rows in the range not settled yet. */
export function readLedgerCells(database: TollgateDatabase, range: DayRange, mapping: ProjectMapping | undefined): { cells: LedgerCell[]; pending: number } {
  const sinceMs = utcDayStartMs(range.since);
  const untilMs = utcDayStartMs(range.until) + DAY_MS;
  // Joined from api_keys so each key's rows are read through ledger_key_time.
  const rows = database.sqlite
    .prepare(
      `SELECT l.created_at / ${DAY_MS} AS dayNumber, l.model AS model, k.name AS keyName, t.name AS tenantName,
         count(*) AS requests, coalesce(sum(l.prompt_tokens), 0) AS inputTokens, coalesce(sum(l.cached_tokens), 0) AS cachedInputTokens,
         coalesce(sum(l.completion_tokens), 0) AS outputTokens, coalesce(sum(l.cost_micros), 0) AS costMicros
       FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= ? AND l.created_at < ?
       LEFT JOIN tenants t ON t.id = k.tenant_id
       WHERE l.status <> 'pending' AND coalesce(l.prompt_tokens, 0) + coalesce(l.completion_tokens, 0) > 0
       GROUP BY dayNumber, l.model, k.id`,
    )
    .all(sinceMs, untilMs) as Array<{
    dayNumber: number;
    model: string;
    keyName: string;
    tenantName: string | null;
    requests: number;
    inputTokens: number;
    cachedInputTokens: number;
    outputTokens: number;
    costMicros: number;
  }>;
  const pending = database.sqlite
    .prepare(`SELECT count(*) FROM api_keys k JOIN ledger l ON l.key_id = k.id AND l.created_at >= ? AND l.created_at < ? WHERE l.status = 'pending'`)
    .pluck()
    .get(sinceMs, untilMs) as number;
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
