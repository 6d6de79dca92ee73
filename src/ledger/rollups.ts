/**
 * The rollups' side of a ledger commit: what each ledger write adds to the
 * hourly, daily, monthly, daily-over-all-keys and lifetime rollups, summed
 * per rollup row in memory and written as one upsert per row at the end of
 * the writer's transaction (so a batch of 500 requests of one key costs one
 * upsert per table, not 500).
 *
 * Every amount is filed under the period the request *started* in: a pending
 * row adds its estimate, its settlement adds (actual − estimate) to the same
 * hour, day, month and key, so each rollup equals the sum of its rows at
 * every commit (schema.ts; README "The ledger").
 */
import type Database from 'better-sqlite3';
import { utcDay, utcHour } from '../calendar.js';

/** What a pending row contributed to the rollups, to settle the difference later. */
export interface Contribution {
  readonly keyId: string;
  readonly tenantId: string | null;
  readonly day: string;
  readonly hour: number;
  readonly model: string;
  readonly createdAt: number;
  readonly estPromptTokens: number;
  readonly estCompletionTokens: number;
  readonly estCostMicros: number;
}

/** The fields of a ledger write that place it in the rollups. */
export type ContributionSource = Pick<Contribution, 'keyId' | 'tenantId' | 'createdAt' | 'model' | 'estPromptTokens' | 'estCompletionTokens' | 'estCostMicros'>;

export function contributionOf(entry: ContributionSource): Contribution {
  return {
    keyId: entry.keyId,
    tenantId: entry.tenantId,
    day: utcDay(entry.createdAt),
    hour: utcHour(entry.createdAt),
    model: entry.model,
    createdAt: entry.createdAt,
    estPromptTokens: entry.estPromptTokens,
    estCompletionTokens: entry.estCompletionTokens,
    estCostMicros: entry.estCostMicros,
  };
}

/** The counters a write moves (all rollups keep these, hourly a subset). */
interface Counters {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  costMicros: number;
  errors: number;
  rejectedRateLimit: number;
  rejectedBudget: number;
  lastRequestAt: number;
}

/** What one ledger write adds; absent counters add nothing. */
export type RollupCounts = Partial<Counters>;

/** A rollup row's accumulated delta: its key columns (as statement parameters) and counters. */
type Delta = Counters & Record<string, number | string>;

/** Column and parameter name of each counter. */
const COUNTER_COLUMNS: ReadonlyArray<readonly [column: string, field: keyof Counters]> = [
  ['requests', 'requests'],
  ['prompt_tokens', 'promptTokens'],
  ['cached_tokens', 'cachedTokens'],
  ['completion_tokens', 'completionTokens'],
  ['reasoning_tokens', 'reasoningTokens'],
  ['cost_micros', 'costMicros'],
  ['errors', 'errors'],
  ['rejected_rate_limit', 'rejectedRateLimit'],
  ['rejected_budget', 'rejectedBudget'],
];
const HOURLY_COUNTERS = new Set(['requests', 'prompt_tokens', 'completion_tokens', 'cost_micros', 'rejected_rate_limit', 'rejected_budget']);

/**
 * `INSERT … ON CONFLICT DO UPDATE` adding a delta to a rollup row. Keys are
 * [column, parameter] pairs; `lastRequestAt` keeps the latest time.
 */
function upsertSql(table: string, keys: ReadonlyArray<readonly [string, string]>, counters: ReadonlyArray<readonly [string, string]>, lastRequestAt: boolean): string {
  const columns = [...keys, ...counters, ...(lastRequestAt ? [['last_request_at', 'lastRequestAt'] as const] : [])];
  const updates = counters.map(([column]) => `${column} = ${column} + excluded.${column}`);
  if (lastRequestAt) updates.push('last_request_at = max(last_request_at, excluded.last_request_at)');
  return `INSERT INTO ${table} (${columns.map(([column]) => column).join(', ')}) VALUES (${columns.map(([, field]) => `@${field}`).join(', ')})
    ON CONFLICT(${keys.map(([column]) => column).join(', ')}) DO UPDATE SET ${updates.join(', ')}`;
}

export type RollupStatements = ReturnType<typeof prepareRollupStatements>;

/** The upserts of every rollup table, prepared once per writer. */
export function prepareRollupStatements(sqlite: Database.Database) {
  const hourly = COUNTER_COLUMNS.filter(([column]) => HOURLY_COUNTERS.has(column));
  return {
    daily: sqlite.prepare(upsertSql('rollups_daily', [['key_id', 'keyId'], ['day', 'day'], ['model', 'model']], COUNTER_COLUMNS, true)),
    hourly: sqlite.prepare(upsertSql('rollups_hourly', [['key_id', 'keyId'], ['hour', 'hour']], hourly, false)),
    monthly: sqlite.prepare(upsertSql('rollups_monthly', [['month', 'month'], ['key_id', 'keyId'], ['model', 'model']], COUNTER_COLUMNS, true)),
    dailyTotal: sqlite.prepare(upsertSql('rollups_daily_total', [['day', 'day']], COUNTER_COLUMNS, false)),
    lifetime: sqlite.prepare(upsertSql('rollups_lifetime', [['key_id', 'keyId']], COUNTER_COLUMNS, true)),
  };
}

function zero(keys: Record<string, string | number>): Delta {
  return { ...keys, requests: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0, costMicros: 0, errors: 0, rejectedRateLimit: 0, rejectedBudget: 0, lastRequestAt: 0 };
}

function addTo(map: Map<string, Delta>, id: string, keys: () => Record<string, string | number>, counts: RollupCounts): void {
  let row = map.get(id);
  if (row === undefined) {
    row = zero(keys());
    map.set(id, row);
  }
  row.requests += counts.requests ?? 0;
  row.promptTokens += counts.promptTokens ?? 0;
  row.cachedTokens += counts.cachedTokens ?? 0;
  row.completionTokens += counts.completionTokens ?? 0;
  row.reasoningTokens += counts.reasoningTokens ?? 0;
  row.costMicros += counts.costMicros ?? 0;
  row.errors += counts.errors ?? 0;
  row.rejectedRateLimit += counts.rejectedRateLimit ?? 0;
  row.rejectedBudget += counts.rejectedBudget ?? 0;
  row.lastRequestAt = Math.max(row.lastRequestAt, counts.lastRequestAt ?? 0);
}

/** The rollup deltas of one transaction. */
export class RollupDeltas {
  private readonly daily = new Map<string, Delta>();
  private readonly hourly = new Map<string, Delta>();
  private readonly monthly = new Map<string, Delta>();
  private readonly dailyTotal = new Map<string, Delta>();
  private readonly lifetime = new Map<string, Delta>();

  /** Adds `counts` to every rollup row the request at `at` is filed under. */
  add(at: Contribution, counts: RollupCounts): void {
    const month = at.day.slice(0, 7);
    addTo(this.daily, `${at.keyId}\u0000${at.day}\u0000${at.model}`, () => ({ keyId: at.keyId, day: at.day, model: at.model }), counts);
    addTo(this.hourly, `${at.keyId}\u0000${at.hour}`, () => ({ keyId: at.keyId, hour: at.hour }), counts);
    addTo(this.monthly, `${month}\u0000${at.keyId}\u0000${at.model}`, () => ({ month, keyId: at.keyId, model: at.model }), counts);
    addTo(this.dailyTotal, at.day, () => ({ day: at.day }), counts);
    addTo(this.lifetime, at.keyId, () => ({ keyId: at.keyId }), counts);
  }

  /** Writes the deltas (inside the caller's transaction). */
  write(statements: RollupStatements): void {
    for (const row of this.daily.values()) statements.daily.run(row);
    for (const row of this.hourly.values()) statements.hourly.run(row);
    for (const row of this.monthly.values()) statements.monthly.run(row);
    for (const row of this.dailyTotal.values()) statements.dailyTotal.run(row);
    for (const row of this.lifetime.values()) statements.lifetime.run(row);
  }
}
