/**
 * The rollups of the SQLite ledger (re-exported by schema.ts, which drizzle
 * reads): per key by day, hour and month, per day over every key, per key
 * since its first request, per end user and per tag, and the names each key
 * has rows for. Their counters are declared once in src/storage/rollup-spec.ts
 * (which a test holds this schema to); the writer keeps them in the same
 * transaction as the rows (src/storage/sqlite/ledger-rollups.ts).
 */
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Per key, per UTC day, per model. */
export const dailyRollups = sqliteTable(
  'rollups_daily',
  {
    keyId: text('key_id').notNull(),
    /** YYYY-MM-DD (UTC). */
    day: text('day').notNull(),
    model: text('model').notNull(),
    requests: integer('requests').notNull().default(0),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    cachedTokens: integer('cached_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    costMicros: integer('cost_micros').notNull().default(0),
    errors: integer('errors').notNull().default(0),
    rejectedRateLimit: integer('rejected_rate_limit').notNull().default(0),
    rejectedBudget: integer('rejected_budget').notNull().default(0),
    lastRequestAt: integer('last_request_at').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.keyId, t.day, t.model] }),
    // Reports and the dashboard over every key find a range of days here. Not
    // a covering index: its entries would change on every counter update, one
    // more page written per commit; this one changes only when a new
    // key·day·model row appears (the all-keys day totals have their own table).
    index('rollups_daily_day').on(t.day),
  ],
);

/** Per key, per UTC hour (for the 48-hour charts). */
export const hourlyRollups = sqliteTable(
  'rollups_hourly',
  {
    keyId: text('key_id').notNull(),
    /** Start of the hour, ms since the epoch. */
    hour: integer('hour').notNull(),
    requests: integer('requests').notNull().default(0),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    costMicros: integer('cost_micros').notNull().default(0),
    rejectedRateLimit: integer('rejected_rate_limit').notNull().default(0),
    rejectedBudget: integer('rejected_budget').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.keyId, t.hour] }),
    // Covering index for the dashboard's 48-hour chart over every key.
    index('rollups_hourly_hour_cover').on(t.hour, t.requests, t.promptTokens, t.completionTokens, t.costMicros, t.rejectedRateLimit, t.rejectedBudget),
  ],
);

/**
 * The counters every spend rollup keeps (hourly keeps fewer). A function, so
 * each table gets its own column builders.
 */
function spendCounters() {
  return {
    requests: integer('requests').notNull().default(0),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    cachedTokens: integer('cached_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    costMicros: integer('cost_micros').notNull().default(0),
    errors: integer('errors').notNull().default(0),
    rejectedRateLimit: integer('rejected_rate_limit').notNull().default(0),
    rejectedBudget: integer('rejected_budget').notNull().default(0),
  };
}

/**
 * Per UTC month, per key, per model: month-to-date spend of every key without
 * summing a month of daily rows. The primary key starts with the month, so
 * "every key this month" is a range of it and one key's month a point in it;
 * no other index (each one is paid on every commit).
 */
export const monthlyRollups = sqliteTable(
  'rollups_monthly',
  {
    /** YYYY-MM (UTC). */
    month: text('month').notNull(),
    keyId: text('key_id').notNull(),
    model: text('model').notNull(),
    ...spendCounters(),
    lastRequestAt: integer('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.month, t.keyId, t.model] })],
);

/** Per UTC day over every key (the 90-day chart: 90 rows instead of every key's days). */
export const dailyTotalRollups = sqliteTable('rollups_daily_total', {
  /** YYYY-MM-DD (UTC). */
  day: text('day').primaryKey(),
  ...spendCounters(),
});

/** Per key since its first request (budgets "in total"). */
export const lifetimeRollups = sqliteTable('rollups_lifetime', {
  keyId: text('key_id').primaryKey(),
  ...spendCounters(),
  lastRequestAt: integer('last_request_at').notNull().default(0),
});

/**
 * Per key, per end user, per day (src/endusers): the end users' own budgets
 * and `tollgate spend --by user`. The primary key starts with the key, so one
 * user's period is a range of it; the day index serves reports over every key.
 * Requests without an end user add nothing here.
 */
export const endUserRollups = sqliteTable(
  'rollups_end_users',
  {
    keyId: text('key_id').notNull(),
    endUser: text('end_user').notNull(),
    /** YYYY-MM-DD (TOLLGATE_TIMEZONE). */
    day: text('day').notNull(),
    ...spendCounters(),
    lastRequestAt: integer('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.endUser, t.day] }), index('rollups_end_users_day').on(t.day)],
);

/**
 * Per key, per tag, per day: tag budgets and `tollgate spend --by tag`. A
 * request with two tags counts in both (so tags do not sum to the total).
 */
export const tagRollups = sqliteTable(
  'rollups_tags',
  {
    keyId: text('key_id').notNull(),
    tag: text('tag').notNull(),
    /** YYYY-MM-DD (TOLLGATE_TIMEZONE). */
    day: text('day').notNull(),
    ...spendCounters(),
    lastRequestAt: integer('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.tag, t.day] }), index('rollups_tags_day').on(t.day)],
);

/**
 * How many distinct end users and tags each key has rollup rows for in a day
 * (`(other)` not counted), kept by triggers on rollups_end_users and
 * rollups_tags (drizzle/0012): what the ledger writer compares with
 * TOLLGATE_MAX_END_USERS and TOLLGATE_MAX_TAGS (src/storage/sqlite/name-bound.ts).
 */
export const rollupNames = sqliteTable(
  'rollup_names',
  {
    keyId: text('key_id').notNull(),
    /** YYYY-MM-DD (TOLLGATE_TIMEZONE). */
    day: text('day').notNull(),
    endUsers: integer('end_users').notNull().default(0),
    tags: integer('tags').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.day] })],
);
