/**
 * The ledger's side of a reconciliation: billed requests summed per UTC day
 * (as the provider buckets them, whatever TOLLGATE_TIMEZONE says), model and
 * key, then mapped to the provider's projects. Read from the raw rows
 * through the per-key time index (the daily rollups follow
 * TOLLGATE_TIMEZONE and the hourly ones have no model).
 *
 * Each provider's rows only: Anthropic's are its Messages API's (`endpoint =
 * 'messages'`, Message Batches included: their rows are priced at the batch
 * rate, as Anthropic bills them), OpenAI's every other.
 *
 * Counted: settled rows that billed tokens (the provider does not count
 * requests it refused or that never reached it). Rows still pending are
 * counted apart: in flight, or left by a crash, they are not on either bill yet.
 *
 * On a replica the rows are read from PostgreSQL (every node's), with the
 * same query over the same indexes: src/storage/ledger-cells.ts.
 */
import type { BillingProvider, LedgerCellSource } from '../storage/ledger-cells.js';
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

/** The ledger's cells of `provider`'s rows over whole UTC days; `pending`: its rows in the range not settled yet. */
export async function readLedgerCells(
  source: LedgerCellSource,
  range: DayRange,
  mapping: ProjectMapping | undefined,
  provider: BillingProvider = 'openai',
): Promise<{ cells: LedgerCell[]; pending: number }> {
  const sinceMs = utcDayStartMs(range.since);
  const untilMs = utcDayStartMs(range.until) + DAY_MS;
  const { rows, pending } = await source.sums(sinceMs, untilMs, provider);
  const mapped = hasProjectMapping(mapping) ? mapping : undefined;
  const cells = rows.map((row): LedgerCell => ({
    day: new Date(row.dayNumber * DAY_MS).toISOString().slice(0, 10),
    model: row.model,
    project: mapped === undefined ? null : projectOf(mapped, row.keyName, row.tenantName),
    requests: row.requests,
    inputTokens: row.inputTokens,
    cachedInputTokens: row.cachedInputTokens,
    cacheWriteTokens: row.cacheWriteTokens,
    outputTokens: row.outputTokens,
    costMicros: row.costMicros,
  }));
  return { cells, pending };
}
