/**
 * The rollups, declared once: the counters every ledger row adds, the rollup
 * tables that keep them and the key columns each table is grouped by. Both
 * backends are built from this declaration — the SQLite writer's upserts
 * (sqlite/ledger-rollups.ts), SQLite's triggers (drizzle/0005, tested against
 * {@link sqliteFollowTriggers}), PostgreSQL's shipper (postgres/shipper-rollups.ts)
 * and what one row adds (row-counts.ts) — so each rollup equals the sum of
 * its rows on both. Adding a counter: add it to {@link COUNTERS} (and the
 * tables that keep it), then a migration for each database (schema.ts in
 * sqlite/ and postgres/; a test compares them with this file).
 *
 * Pure: no I/O.
 */

/** Every counter, in column order: [column, field]. */
export const COUNTERS = [
  ['requests', 'requests'],
  ['prompt_tokens', 'promptTokens'],
  ['cached_tokens', 'cachedTokens'],
  ['completion_tokens', 'completionTokens'],
  ['reasoning_tokens', 'reasoningTokens'],
  ['cost_micros', 'costMicros'],
  ['errors', 'errors'],
  ['rejected_rate_limit', 'rejectedRateLimit'],
  ['rejected_budget', 'rejectedBudget'],
] as const;

export type CounterField = (typeof COUNTERS)[number][1];
export type CounterColumn = (typeof COUNTERS)[number][0];

/** One value per counter. */
export type Counters = Record<CounterField, number>;

/** The counter fields, in column order. */
const COUNTER_FIELDS: readonly CounterField[] = COUNTERS.map(([, field]) => field);

/** Every counter at zero (copy it with a spread: `{ ...ZERO_COUNTERS }`). */
export const ZERO_COUNTERS: Readonly<Counters> = Object.freeze(Object.fromEntries(COUNTER_FIELDS.map((field) => [field, 0])) as Counters);

/** The hourly rollups keep fewer counters (the 48-hour charts need no more). */
const HOURLY: readonly CounterField[] = ['requests', 'promptTokens', 'completionTokens', 'costMicros', 'rejectedRateLimit', 'rejectedBudget'];

/**
 * Where a ledger row is filed: the values its rollup rows are keyed by. Every
 * period is the one the request *started* in; `end_user` and `tag` are the
 * names as counted (past the key's bound of the day: `(other)`).
 */
interface Placement {
  readonly key_id: string;
  /** YYYY-MM-DD. */
  readonly day: string;
  /** Start of the hour, ms since the epoch. */
  readonly hour: number;
  /** YYYY-MM. */
  readonly month: string;
  readonly model: string;
  readonly end_user: string;
  readonly tag: string;
}

export type KeyColumn = keyof Placement;

export interface RollupTable {
  readonly table: string;
  /** The primary key, in its order (the shipper upserts in that order, so nodes never deadlock). */
  readonly keys: readonly KeyColumn[];
  /** The counters it keeps, in column order. */
  readonly counters: readonly CounterField[];
  /** Whether it keeps `last_request_at` (the latest `created_at` filed in it). */
  readonly lastRequestAt: boolean;
  /**
   * How SQLite keeps it: upserted by the writer, or following `rollups_daily`
   * by triggers (one upsert a commit instead of four: drizzle/0005). The
   * shipper upserts every table on PostgreSQL.
   */
  readonly sqlite: 'writer' | 'follows daily';
}

/** The rollup tables, by name. */
export const ROLLUPS = {
  /** Per key, day and model. */
  daily: { table: 'rollups_daily', keys: ['key_id', 'day', 'model'], counters: COUNTER_FIELDS, lastRequestAt: true, sqlite: 'writer' },
  /** Per key and hour (the 48-hour charts). */
  hourly: { table: 'rollups_hourly', keys: ['key_id', 'hour'], counters: HOURLY, lastRequestAt: false, sqlite: 'writer' },
  /** Per month, key and model (month-to-date without summing days). */
  monthly: { table: 'rollups_monthly', keys: ['month', 'key_id', 'model'], counters: COUNTER_FIELDS, lastRequestAt: true, sqlite: 'follows daily' },
  /** Per day over every key (the 90-day chart). */
  total: { table: 'rollups_daily_total', keys: ['day'], counters: COUNTER_FIELDS, lastRequestAt: false, sqlite: 'follows daily' },
  /** Per key since its first request (budgets "in total"). */
  lifetime: { table: 'rollups_lifetime', keys: ['key_id'], counters: COUNTER_FIELDS, lastRequestAt: true, sqlite: 'follows daily' },
  /** Per key, end user and day: requests without an end user add nothing here. */
  endUsers: { table: 'rollups_end_users', keys: ['key_id', 'end_user', 'day'], counters: COUNTER_FIELDS, lastRequestAt: true, sqlite: 'writer' },
  /** Per key, tag and day: a request with two tags counts in both. */
  tags: { table: 'rollups_tags', keys: ['key_id', 'tag', 'day'], counters: COUNTER_FIELDS, lastRequestAt: true, sqlite: 'writer' },
} as const satisfies Record<string, RollupTable>;

export type RollupName = keyof typeof ROLLUPS;

/** The tables in declaration order. */
export const ROLLUP_TABLES: ReadonlyArray<readonly [RollupName, RollupTable]> = Object.entries(ROLLUPS) as Array<[RollupName, RollupTable]>;

/** The column of a counter. */
export function counterColumn(field: CounterField): CounterColumn {
  return COUNTERS.find(([, f]) => f === field)![0];
}

/**
 * Adds `counts` to `row`, counter by counter (absent counters add nothing).
 * Generated from {@link COUNTERS} once: the writer calls it for every write,
 * and a loop over the fields by name cost ~450 ns a call against ~30 ns for
 * named properties (measured).
 */
export const addCounters = new Function(
  'row',
  'counts',
  COUNTER_FIELDS.map((field) => `if (counts.${field} !== undefined) row.${field} += counts.${field};`).join('\n'),
) as (row: Counters, counts: Partial<Counters>) => void;

/** b − a, counter by counter. */
export function subtractCounters(b: Readonly<Counters>, a: Readonly<Counters>): Counters {
  const out = { ...ZERO_COUNTERS };
  for (const field of COUNTER_FIELDS) out[field] = b[field] - a[field];
  return out;
}

/** `true` when the table's key includes a name (end user or tag): one rollup row per name of the row. */
export function nameColumnOf(table: RollupTable): 'end_user' | 'tag' | undefined {
  if (table.keys.includes('end_user')) return 'end_user';
  if (table.keys.includes('tag')) return 'tag';
  return undefined;
}

/** Columns of an upsert into `table`, in order: keys, counters, then `last_request_at`. */
export function upsertColumns(table: RollupTable): string[] {
  return [...table.keys, ...table.counters.map(counterColumn), ...(table.lastRequestAt ? ['last_request_at'] : [])];
}

/**
 * The `DO UPDATE SET` of an upsert adding `excluded` to the row: `qualify` is
 * how the row's own column is named (SQLite: bare, PostgreSQL: `table.column`),
 * `greatest` the function that keeps the latest time.
 */
export function upsertUpdates(table: RollupTable, qualify: (column: string) => string, greatest: 'max' | 'greatest'): string {
  const updates = table.counters.map(counterColumn).map((column) => `${column} = ${qualify(column)} + excluded.${column}`);
  if (table.lastRequestAt) updates.push(`last_request_at = ${greatest}(${qualify('last_request_at')}, excluded.last_request_at)`);
  return updates.join(', ');
}

/**
 * The SQLite triggers that keep the tables marked `follows daily` equal to
 * `rollups_daily` (an insert adds the new row, an update the difference), as
 * drizzle/0005_rollup-triggers.sql holds them: a test checks the migration
 * against this text, so a counter added here and not there fails.
 */
export function sqliteFollowTriggers(): string[] {
  const daily: RollupTable = ROLLUPS.daily;
  const followers = ROLLUP_TABLES.filter(([, table]) => table.sqlite === 'follows daily').map(([, table]) => table);
  const keyValue = (column: KeyColumn): string => {
    if (column === 'month') return 'substr(NEW.day, 1, 7)';
    if (!daily.keys.includes(column)) throw new Error(`a table following rollups_daily cannot be keyed by ${column}`);
    return `NEW.${column}`;
  };
  const trigger = (event: 'INSERT' | 'UPDATE') => {
    const statements = followers.map((table) => {
      const counters = table.counters.map(counterColumn);
      const values = [
        ...table.keys.map(keyValue),
        ...counters.map((column) => (event === 'INSERT' ? `NEW.${column}` : `NEW.${column} - OLD.${column}`)),
        ...(table.lastRequestAt ? ['NEW.last_request_at'] : []),
      ];
      return (
        `  INSERT INTO ${table.table} (${upsertColumns(table).join(', ')})\n` +
        `    VALUES (${values.join(', ')})\n` +
        `    ON CONFLICT(${table.keys.join(', ')}) DO UPDATE SET ${upsertUpdates(table, (column) => column, 'max')};`
      );
    });
    return `CREATE TRIGGER rollups_daily_follow_${event.toLowerCase()} AFTER ${event} ON ${daily.table} BEGIN\n${statements.join('\n')}\nEND;`;
  };
  return [trigger('INSERT'), trigger('UPDATE')];
}
