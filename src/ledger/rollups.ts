/**
 * The rollups' side of a ledger commit: what each ledger write adds to the
 * hourly and daily rollups, summed per rollup row in memory and written as
 * one upsert per row at the end of the writer's transaction (so a batch of
 * 500 requests of one key costs one upsert per table, not 500). The monthly,
 * all-keys daily and lifetime rollups follow the daily ones inside SQLite, by
 * triggers in the same transaction (drizzle/0005_rollup-triggers.sql).
 *
 * Every amount is filed under the period the request *started* in: a pending
 * row adds its estimate, its settlement adds (actual − estimate) to the same
 * hour, day, month and key, so each rollup equals the sum of its rows at
 * every commit (schema.ts; README "The ledger"). End users and tags past the
 * key's bound of the day are counted under `(other)`, as the writer decided
 * for the pending row (name-bound.ts), so its settlement moves the same rows.
 */
import type Database from 'better-sqlite3';
import { calendarDay, utcHour } from '../domain/calendar.js';
import { rollupNamesOf } from '../domain/rollup-names.js';

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
  /** The request's end user and tags: their own rollups move too (src/endusers). */
  readonly endUser: string | undefined;
  readonly tags: readonly string[];
  /** Which of them are counted under `(other)` (bits: src/endusers/rollup-names.ts); 0 when none. */
  readonly folded: number;
}

/** The fields of a ledger write that place it in the rollups. */
export type ContributionSource = Pick<
  Contribution,
  'keyId' | 'tenantId' | 'createdAt' | 'model' | 'estPromptTokens' | 'estCompletionTokens' | 'estCostMicros'
> & {
  readonly endUser?: string | undefined;
  readonly tags?: readonly string[] | undefined;
};

const NO_TAGS: readonly string[] = Object.freeze([]);

export function contributionOf(entry: ContributionSource, folded = 0): Contribution {
  return {
    endUser: entry.endUser,
    tags: entry.tags ?? NO_TAGS,
    folded,
    keyId: entry.keyId,
    tenantId: entry.tenantId,
    day: calendarDay(entry.createdAt),
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

/** A rollup table's upsert and the delta fields it binds, in order. */
interface RollupTable {
  readonly statement: Database.Statement;
  readonly fields: readonly string[];
}

/**
 * `INSERT … ON CONFLICT DO UPDATE` adding a delta to a rollup row. Keys are
 * [column, delta field] pairs; `lastRequestAt` keeps the latest time.
 * Parameters are positional: binding an array costs less than looking up
 * named ones (measured: 2.9 µs against 4–5 µs an upsert).
 */
function rollupTable(
  sqlite: Database.Database,
  table: string,
  keys: ReadonlyArray<readonly [string, string]>,
  counters: ReadonlyArray<readonly [string, string]>,
  lastRequestAt: boolean,
): RollupTable {
  const columns = [...keys, ...counters, ...(lastRequestAt ? [['last_request_at', 'lastRequestAt'] as const] : [])];
  const updates = counters.map(([column]) => `${column} = ${column} + excluded.${column}`);
  if (lastRequestAt) updates.push('last_request_at = max(last_request_at, excluded.last_request_at)');
  const statement = sqlite.prepare(
    `INSERT INTO ${table} (${columns.map(([column]) => column).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
     ON CONFLICT(${keys.map(([column]) => column).join(', ')}) DO UPDATE SET ${updates.join(', ')}`,
  );
  return { statement, fields: columns.map(([, field]) => field) };
}

export type RollupStatements = ReturnType<typeof prepareRollupStatements>;

/** The upserts of every rollup table, prepared once per writer. */
export function prepareRollupStatements(sqlite: Database.Database) {
  const hourly = COUNTER_COLUMNS.filter(([column]) => HOURLY_COUNTERS.has(column));
  return {
    daily: rollupTable(
      sqlite,
      'rollups_daily',
      [
        ['key_id', 'keyId'],
        ['day', 'day'],
        ['model', 'model'],
      ],
      COUNTER_COLUMNS,
      true,
    ),
    hourly: rollupTable(
      sqlite,
      'rollups_hourly',
      [
        ['key_id', 'keyId'],
        ['hour', 'hour'],
      ],
      hourly,
      false,
    ),
    endUsers: rollupTable(
      sqlite,
      'rollups_end_users',
      [
        ['key_id', 'keyId'],
        ['end_user', 'name'],
        ['day', 'day'],
      ],
      COUNTER_COLUMNS,
      true,
    ),
    tags: rollupTable(
      sqlite,
      'rollups_tags',
      [
        ['key_id', 'keyId'],
        ['tag', 'name'],
        ['day', 'day'],
      ],
      COUNTER_COLUMNS,
      true,
    ),
  };
}

function upsert(table: RollupTable, rows: Iterable<Delta>): void {
  const values: Array<number | string> = new Array<number | string>(table.fields.length);
  for (const row of rows) {
    for (let i = 0; i < values.length; i += 1) values[i] = row[table.fields[i]!]!;
    table.statement.run(values);
  }
}

/** A delta with every counter at zero. */
function zero(keys: Record<string, string | number>): Delta {
  return Object.assign(
    {
      requests: 0,
      promptTokens: 0,
      cachedTokens: 0,
      completionTokens: 0,
      reasoningTokens: 0,
      costMicros: 0,
      errors: 0,
      rejectedRateLimit: 0,
      rejectedBudget: 0,
      lastRequestAt: 0,
    },
    keys,
  );
}

function addCounts(row: Counters, counts: RollupCounts): void {
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

/** The smallest period a write is filed under: a key's hour on one model (the hour gives the day and month). */
interface Cell extends Counters {
  readonly keyId: string;
  readonly hour: number;
  readonly day: string;
  readonly model: string;
}

/** Sums cells into the rows of one rollup table, grouped by `idOf`. */
function groupCells(cells: Iterable<Cell>, idOf: (cell: Cell) => string, keysOf: (cell: Cell) => Record<string, string | number>): Delta[] {
  const rows = new Map<string, Delta>();
  for (const cell of cells) {
    const id = idOf(cell);
    let row = rows.get(id);
    if (row === undefined) {
      row = zero(keysOf(cell));
      rows.set(id, row);
    }
    addCounts(row, cell);
  }
  return [...rows.values()];
}

/**
 * The rollup deltas of one transaction. Writes are summed per cell first and
 * spread over the five tables once, at the end: a batch of 500 requests does
 * one map lookup each instead of five.
 */
export class RollupDeltas {
  private readonly cells = new Map<string, Cell>();
  /** Per key·end user·day and key·tag·day (only for requests that have them). */
  private readonly endUsers = new Map<string, Delta>();
  private readonly tags = new Map<string, Delta>();

  /** Adds `counts` to every rollup row the request at `at` is filed under. */
  add(at: Contribution, counts: RollupCounts): void {
    const { endUser, tags } = rollupNamesOf(at.endUser, at.tags, at.folded);
    if (endUser !== undefined) addNamed(this.endUsers, at, endUser, counts);
    for (const tag of tags) addNamed(this.tags, at, tag, counts);
    const id = `${at.keyId}\u0000${at.hour}\u0000${at.model}`;
    let cell = this.cells.get(id);
    if (cell === undefined) {
      cell = {
        keyId: at.keyId,
        hour: at.hour,
        day: at.day,
        model: at.model,
        requests: 0,
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 0,
        reasoningTokens: 0,
        costMicros: 0,
        errors: 0,
        rejectedRateLimit: 0,
        rejectedBudget: 0,
        lastRequestAt: 0,
      };
      this.cells.set(id, cell);
    }
    addCounts(cell, counts);
  }

  /** Writes the deltas (inside the caller's transaction). */
  write(statements: RollupStatements): void {
    const cells = [...this.cells.values()];
    upsert(
      statements.daily,
      groupCells(
        cells,
        (c) => `${c.keyId}\u0000${c.day}\u0000${c.model}`,
        (c) => ({ keyId: c.keyId, day: c.day, model: c.model }),
      ),
    );
    upsert(
      statements.hourly,
      groupCells(
        cells,
        (c) => `${c.keyId}\u0000${c.hour}`,
        (c) => ({ keyId: c.keyId, hour: c.hour }),
      ),
    );
    if (this.endUsers.size > 0) upsert(statements.endUsers, this.endUsers.values());
    if (this.tags.size > 0) upsert(statements.tags, this.tags.values());
  }
}

/** Adds `counts` to the key·name·day row of an end user's or tag's rollup. */
function addNamed(rows: Map<string, Delta>, at: Contribution, name: string, counts: RollupCounts): void {
  const id = `${at.keyId}\u0000${name}\u0000${at.day}`;
  let row = rows.get(id);
  if (row === undefined) {
    row = zero({ keyId: at.keyId, name, day: at.day });
    rows.set(id, row);
  }
  addCounts(row, counts);
}
