/**
 * The PostgreSQL schema (drizzle), for `TOLLGATE_DATABASE_URL`: the same
 * tables, columns and meaning as the SQLite schema in schema.ts (read its
 * header for the units and the ledger invariants), shared by every node.
 * Migrations in `drizzle/pg/` are generated from this file with
 * `npm run db:generate:pg`; the hand-written ones are drizzle-kit "custom"
 * migrations (0001: change notifications for the nodes' key caches).
 *
 * Differences from SQLite, all about types: times, money and counters are
 * `bigint` (a lifetime rollup outgrows 32 bits), read as JS numbers (exact up
 * to 2^53); booleans are `boolean`. The monthly, all-keys daily and lifetime
 * rollups are written by the shipper (src/storage/postgres/shipper.ts) in the same
 * transaction as the daily ones, not by triggers.
 */
import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';

/** A bigint column read as a JS number. */
function big(name: string) {
  return bigint(name, { mode: 'number' });
}

export const tenants = pgTable(
  'tenants',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    policy: text('policy').notNull().default('{"limits":[]}'),
    createdAt: big('created_at').notNull(),
    updatedAt: big('updated_at').notNull(),
    version: big('version').notNull().default(0),
  },
  (t) => [uniqueIndex('tenants_name_unique').on(t.name), index('tenants_version').on(t.version)],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    tenantId: text('tenant_id').references(() => tenants.id),
    keyHash: text('key_hash').notNull(),
    prefix: text('prefix').notNull(),
    createdAt: big('created_at').notNull(),
    updatedAt: big('updated_at').notNull(),
    revokedAt: big('revoked_at'),
    expiresAt: big('expires_at'),
    rotatedAt: big('rotated_at'),
    throttledAt: big('throttled_at'),
    throttleReason: text('throttle_reason'),
    pausedOwners: text('paused_owners'),
    suspendedAt: big('suspended_at'),
    suspendedBy: text('suspended_by'),
    policy: text('policy').notNull().default('{"limits":[]}'),
    metadata: text('metadata').notNull().default('{}'),
    version: big('version').notNull().default(0),
  },
  (t) => [
    uniqueIndex('api_keys_hash_unique').on(t.keyHash),
    uniqueIndex('api_keys_live_name_unique')
      .on(t.name)
      .where(sql`revoked_at IS NULL`),
    index('api_keys_prefix').on(t.prefix),
    index('api_keys_tenant').on(t.tenantId),
    index('api_keys_version').on(t.version),
  ],
);

export const ledger = pgTable(
  'ledger',
  {
    requestId: text('request_id').primaryKey(),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    tenantId: text('tenant_id'),
    createdAt: big('created_at').notNull(),
    completedAt: big('completed_at'),
    endpoint: text('endpoint').notNull(),
    model: text('model').notNull(),
    stream: boolean('stream').notNull(),
    status: text('status').notNull(),
    httpStatus: big('http_status'),
    estPromptTokens: big('est_prompt_tokens').notNull().default(0),
    estCompletionTokens: big('est_completion_tokens').notNull().default(0),
    estCostMicros: big('est_cost_micros').notNull().default(0),
    promptTokens: big('prompt_tokens'),
    cachedTokens: big('cached_tokens'),
    completionTokens: big('completion_tokens'),
    reasoningTokens: big('reasoning_tokens'),
    audioPromptTokens: big('audio_prompt_tokens'),
    audioCompletionTokens: big('audio_completion_tokens'),
    cacheWrite5mTokens: big('cache_write_5m_tokens'),
    cacheWrite1hTokens: big('cache_write_1h_tokens'),
    serviceTier: text('service_tier'),
    toolCostMicros: big('tool_cost_micros'),
    costMicros: big('cost_micros'),
    priceKnown: boolean('price_known').notNull().default(true),
    usageSource: text('usage_source'),
    latencyMs: big('latency_ms'),
    ttftMs: big('ttft_ms'),
    upstreamRequestId: text('upstream_request_id'),
    errorCode: text('error_code'),
    /** The request's end user and its tags, comma-joined (as in schema.ts; src/endusers). */
    endUser: text('end_user'),
    tags: text('tags'),
    /** The agent session (as in schema.ts; src/endusers/session.ts). */
    session: text('session'),
    /** The upstream that answered, upstreams tried, and failed tries an upstream may bill (as in schema.ts; src/pipeline/forward.ts). */
    upstream: text('upstream'),
    attempts: integer('attempts'),
    billedAttempts: integer('billed_attempts'),
    /**
     * Which names PostgreSQL's rollups count this row under `(other)` (bits as in schema.ts), as
     * the shipper decided against every node's names of the day; null when none.
     */
    rollupFolded: integer('rollup_folded'),
  },
  (t) => [
    index('ledger_key_time').on(t.keyId, t.createdAt),
    index('ledger_pending_key')
      .on(t.keyId, t.createdAt)
      .where(sql`status = 'pending'`),
    index('ledger_key_429')
      .on(t.keyId, t.createdAt)
      .where(sql`http_status = 429`),
    // A session's rows (its budgets and reports read them: sessions have no rollup).
    index('ledger_key_session')
      .on(t.keyId, t.session, t.createdAt)
      .where(sql`session IS NOT NULL`),
    // Retention prunes raw rows by age (README "Running replicas").
    index('ledger_created').on(t.createdAt),
  ],
);

/** The counters every spend rollup keeps (hourly keeps fewer). */
function spendCounters() {
  return {
    requests: big('requests').notNull().default(0),
    promptTokens: big('prompt_tokens').notNull().default(0),
    cachedTokens: big('cached_tokens').notNull().default(0),
    completionTokens: big('completion_tokens').notNull().default(0),
    reasoningTokens: big('reasoning_tokens').notNull().default(0),
    costMicros: big('cost_micros').notNull().default(0),
    errors: big('errors').notNull().default(0),
    rejectedRateLimit: big('rejected_rate_limit').notNull().default(0),
    rejectedBudget: big('rejected_budget').notNull().default(0),
  };
}

export const dailyRollups = pgTable(
  'rollups_daily',
  {
    keyId: text('key_id').notNull(),
    day: text('day').notNull(),
    model: text('model').notNull(),
    ...spendCounters(),
    lastRequestAt: big('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.day, t.model] }), index('rollups_daily_day').on(t.day)],
);

export const hourlyRollups = pgTable(
  'rollups_hourly',
  {
    keyId: text('key_id').notNull(),
    hour: big('hour').notNull(),
    requests: big('requests').notNull().default(0),
    promptTokens: big('prompt_tokens').notNull().default(0),
    completionTokens: big('completion_tokens').notNull().default(0),
    costMicros: big('cost_micros').notNull().default(0),
    rejectedRateLimit: big('rejected_rate_limit').notNull().default(0),
    rejectedBudget: big('rejected_budget').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.hour] }), index('rollups_hourly_hour').on(t.hour)],
);

export const monthlyRollups = pgTable(
  'rollups_monthly',
  {
    month: text('month').notNull(),
    keyId: text('key_id').notNull(),
    model: text('model').notNull(),
    ...spendCounters(),
    lastRequestAt: big('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.month, t.keyId, t.model] })],
);

/** Per key·end user·day (src/endusers), moved by the shipper with the others. */
export const endUserRollups = pgTable(
  'rollups_end_users',
  {
    keyId: text('key_id').notNull(),
    endUser: text('end_user').notNull(),
    day: text('day').notNull(),
    ...spendCounters(),
    lastRequestAt: big('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.endUser, t.day] }), index('rollups_end_users_day').on(t.day)],
);

/** Per key·tag·day: a request with two tags counts in both (so tags do not sum to the total). */
export const tagRollups = pgTable(
  'rollups_tags',
  {
    keyId: text('key_id').notNull(),
    tag: text('tag').notNull(),
    day: text('day').notNull(),
    ...spendCounters(),
    lastRequestAt: big('last_request_at').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.tag, t.day] }), index('rollups_tags_day').on(t.day)],
);

/**
 * Distinct end users and tags of a key's day in PostgreSQL's rollups (`(other)`
 * not counted), kept by the shipper in the same transaction as the rollups,
 * whose row lock serialises the nodes' decisions (src/storage/postgres/shipper.ts).
 */
export const rollupNames = pgTable(
  'rollup_names',
  {
    keyId: text('key_id').notNull(),
    day: text('day').notNull(),
    endUsers: integer('end_users').notNull().default(0),
    tags: integer('tags').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.day] })],
);

export const dailyTotalRollups = pgTable('rollups_daily_total', {
  day: text('day').primaryKey(),
  ...spendCounters(),
});

export const lifetimeRollups = pgTable('rollups_lifetime', {
  keyId: text('key_id').primaryKey(),
  ...spendCounters(),
  lastRequestAt: big('last_request_at').notNull().default(0),
});

/**
 * Which key created each stored response (POST /v1/responses), for every
 * node: a response created through one node is retrieved, cancelled or
 * deleted through any other. Shipped from each node's own `responses` table
 * with the ledger (src/storage/postgres/shipper.ts); polling a background job stays
 * with the node that holds its ledger row (src/storage/responses.ts).
 */
export const responses = pgTable('responses', {
  id: text('id').primaryKey(),
  keyId: text('key_id')
    .notNull()
    .references(() => apiKeys.id),
  requestId: text('request_id').notNull(),
  createdAt: big('created_at').notNull(),
  deletedAt: big('deleted_at'),
  /** An item of a stored response: the response it belongs to (src/storage/sqlite/schema.ts). */
  itemOf: text('item_of'),
  /** A response's settled input plus output tokens, when known (src/storage/sqlite/schema.ts). */
  billedTokens: big('billed_tokens'),
});

/**
 * One row: raw ledger rows created before `pruned_before` (ms) have been, or
 * are being, deleted by retention (src/storage/postgres/retention.ts); the shipper
 * ships nothing older. Its row exists from the migration on, so the
 * shipper's FOR SHARE always has something to lock.
 */
export const ledgerRetention = pgTable('ledger_retention', {
  id: integer('id').primaryKey(),
  prunedBefore: big('pruned_before').notNull().default(0),
});

/** Alerts claimed by any node (src/storage/alert-claims.ts): a unique row, so each alert is sent once. */
export const alertClaims = pgTable(
  'alert_claims',
  {
    id: text('id').primaryKey(),
    claimedAt: big('claimed_at').notNull(),
    expiresAt: big('expires_at').notNull(),
  },
  (t) => [index('alert_claims_expires').on(t.expiresAt)],
);

/**
 * Read-only dashboard tokens of one tenant (src/storage/postgres/tenant-tokens.ts),
 * as in schema.ts: only the SHA-256 of the token and its visible prefix are
 * kept. Shared, so a token issued anywhere logs in on every node and a
 * revocation ends its sessions on every node.
 */
export const dashboardTokens = pgTable(
  'dashboard_tokens',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    /** SHA-256 of the whole token, hex. */
    tokenHash: text('token_hash').notNull(),
    /** `tgd-` and 6 more characters, safe to show. */
    prefix: text('prefix').notNull(),
    /** The operator's note (who it was given to). */
    label: text('label').notNull().default(''),
    createdAt: big('created_at').notNull(),
    expiresAt: big('expires_at'),
    revokedAt: big('revoked_at'),
  },
  (t) => [uniqueIndex('dashboard_tokens_hash_unique').on(t.tokenHash), index('dashboard_tokens_tenant').on(t.tenantId)],
);

/**
 * Results of `tollgate reconcile` (src/storage/postgres/reconciliations.ts), as in
 * schema.ts: the report as JSON, the newest shown on every node's dashboard.
 */
export const reconciliations = pgTable(
  'reconciliations',
  {
    id: big('id').primaryKey().generatedAlwaysAsIdentity(),
    createdAt: big('created_at').notNull(),
    provider: text('provider').notNull(),
    /** First and last UTC day compared, YYYY-MM-DD. */
    since: text('since').notNull(),
    until: text('until').notNull(),
    /** Cells that disagree beyond the tolerance, and price entries flagged. */
    differences: integer('differences').notNull(),
    priceFlags: integer('price_flags').notNull(),
    /** The whole report (src/reconcile/compare.ts `ReconcileReport`), JSON. */
    report: text('report').notNull(),
  },
  (t) => [index('reconciliations_created').on(t.createdAt)],
);

/** Batch input files (src/storage/postgres/batches.ts), as in schema.ts: shared, so a file uploaded through one node starts a batch through any. */
export const batchFiles = pgTable('batch_files', {
  id: text('id').primaryKey(),
  keyId: text('key_id').notNull(),
  createdAt: big('created_at').notNull(),
  filename: text('filename').notNull(),
  bytes: big('bytes').notNull(),
  lines: integer('lines').notNull(),
  endpoint: text('endpoint').notNull(),
  model: text('model').notNull(),
  promptTokens: big('prompt_tokens').notNull(),
  completionTokens: big('completion_tokens').notNull(),
  costMicros: big('cost_micros').notNull(),
  deletedAt: big('deleted_at'),
});

/**
 * Batch jobs (src/storage/postgres/batches.ts), as in schema.ts: shared, so
 * every node sees which key owns a batch; only processes of the node whose
 * ledger holds its reservation (`node`) claim it and settle it.
 */
export const batchJobs = pgTable(
  'batch_jobs',
  {
    id: text('id').primaryKey(),
    /** openai | anthropic */
    provider: text('provider').notNull(),
    keyId: text('key_id').notNull(),
    tenantId: text('tenant_id'),
    requestId: text('request_id').notNull(),
    node: text('node').notNull(),
    createdAt: big('created_at').notNull(),
    inputFileId: text('input_file_id'),
    model: text('model').notNull(),
    reservedMicros: big('reserved_micros').notNull(),
    status: text('status').notNull(),
    settledAt: big('settled_at'),
    claimedBy: text('claimed_by'),
    /** Its claim holds until then (ms); 0 = nobody's. */
    claimedUntil: big('claimed_until').notNull().default(0),
    deletedAt: big('deleted_at'),
  },
  (t) => [
    // A key's batches of one provider, newest first, page by page.
    index('batch_jobs_key_list').on(t.keyId, t.provider, t.createdAt, t.id),
    // Jobs still to settle (a small index: rows leave it once settled).
    index('batch_jobs_unsettled')
      .on(t.node, t.settledAt, t.claimedUntil)
      .where(sql`settled_at IS NULL`),
  ],
);

export * from './schema-admins.js';
