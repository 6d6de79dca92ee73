/**
 * The SQLite schema (drizzle). Migrations in `drizzle/` are generated from
 * this file with `npm run db:generate`; never edit them by hand, except to
 * append the statements that move data into a new table (0003's backfill).
 *
 * Money is integer micro-USD everywhere; times are integer milliseconds since
 * the epoch (UTC); token counts are integers.
 *
 * Ledger invariants (also in the README):
 * - one row per request, keyed by its request id, written *before* the
 *   request goes upstream (status `pending`, estimated cost) and completed
 *   after it (actual tokens and cost, outcome);
 * - the rollups (daily, hourly, monthly, daily over all keys, lifetime) are
 *   maintained in the same transactions: a pending row adds its estimate, its
 *   completion adds (actual − estimate), both filed under the period the
 *   request started in. So at every commit, each rollup equals the sum over
 *   ledger rows of `cost_micros` for completed rows plus `est_cost_micros` for
 *   pending ones.
 */
import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

export const tenants = sqliteTable(
  'tenants',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    /** JSON Policy (limits, budget) shared by all the tenant's keys. */
    policy: text('policy').notNull().default('{"limits":[]}'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    /** Bumped on every change; the proxy's cache polls max(version). */
    version: integer('version').notNull().default(0),
  },
  (t) => [uniqueIndex('tenants_name_unique').on(t.name), index('tenants_version').on(t.version)],
);

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    tenantId: text('tenant_id').references(() => tenants.id),
    /** SHA-256 of the whole key, hex. The key itself is never stored. */
    keyHash: text('key_hash').notNull(),
    /** The key's first characters (`tg-` + 6), safe to show. */
    prefix: text('prefix').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    revokedAt: integer('revoked_at'),
    expiresAt: integer('expires_at'),
    rotatedAt: integer('rotated_at'),
    /** When the runaway stop (src/alerts/runaway.ts) last paused or resumed the key, and while paused, its refusals' message. */
    throttledAt: integer('throttled_at'),
    throttleReason: text('throttle_reason'),
    /** JSON list of the key's sessions and end users the runaway stop paused (src/domain/owner-pauses.ts), null when none. */
    pausedOwners: text('paused_owners'),
    /** While an operator suspends the key (docs/admins.md): since when, and who (an admin's name, `cli:<user>`). */
    suspendedAt: integer('suspended_at'),
    suspendedBy: text('suspended_by'),
    /** JSON Policy: limits, budget, allowed models. */
    policy: text('policy').notNull().default('{"limits":[]}'),
    /** JSON object of string labels, for the operator's own bookkeeping. */
    metadata: text('metadata').notNull().default('{}'),
    version: integer('version').notNull().default(0),
  },
  (t) => [
    uniqueIndex('api_keys_hash_unique').on(t.keyHash),
    // A name identifies one live key; revoked keys keep theirs for the record.
    uniqueIndex('api_keys_live_name_unique')
      .on(t.name)
      .where(sql`revoked_at IS NULL`),
    index('api_keys_prefix').on(t.prefix),
    index('api_keys_tenant').on(t.tenantId),
    index('api_keys_version').on(t.version),
  ],
);

export const ledger = sqliteTable(
  'ledger',
  {
    requestId: text('request_id').primaryKey(),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    tenantId: text('tenant_id'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
    endpoint: text('endpoint').notNull(),
    model: text('model').notNull(),
    stream: integer('stream', { mode: 'boolean' }).notNull(),
    /** pending | ok | upstream_error | client_aborted | upstream_interrupted | upstream_timeout | cut_at_cost_cap | rejected | invalid_request */
    status: text('status').notNull(),
    httpStatus: integer('http_status'),
    estPromptTokens: integer('est_prompt_tokens').notNull().default(0),
    estCompletionTokens: integer('est_completion_tokens').notNull().default(0),
    estCostMicros: integer('est_cost_micros').notNull().default(0),
    promptTokens: integer('prompt_tokens'),
    cachedTokens: integer('cached_tokens'),
    completionTokens: integer('completion_tokens'),
    reasoningTokens: integer('reasoning_tokens'),
    /** Part of prompt_tokens that was audio. */
    audioPromptTokens: integer('audio_prompt_tokens'),
    /** Part of completion_tokens that was audio. */
    audioCompletionTokens: integer('audio_completion_tokens'),
    /** Parts of prompt_tokens written to the prompt cache (Anthropic), kept 5 minutes and 1 hour; billed at a premium. */
    cacheWrite5mTokens: integer('cache_write_5m_tokens'),
    cacheWrite1hTokens: integer('cache_write_1h_tokens'),
    /** The `service_tier` the upstream says it used (priced accordingly); null when it did not say. */
    serviceTier: text('service_tier'),
    /** Part of cost_micros that paid for built-in tool calls (web/file search, containers, images). */
    toolCostMicros: integer('tool_cost_micros'),
    costMicros: integer('cost_micros'),
    /** False when the model was not in the price table and the fallback price was used. */
    priceKnown: integer('price_known', { mode: 'boolean' }).notNull().default(true),
    /** How the actual usage was known: reported (by the upstream) | counted (streamed text) | none. */
    usageSource: text('usage_source'),
    latencyMs: integer('latency_ms'),
    ttftMs: integer('ttft_ms'),
    upstreamRequestId: text('upstream_request_id'),
    errorCode: text('error_code'),
    /**
     * The end user of the key's app the request was made for (the body's `user` or
     * `safety_identifier`, or `x-tollgate-user`; src/endusers/attribution.ts), null when none.
     */
    endUser: text('end_user'),
    /** The request's tags, comma-joined (`a,b`; tags cannot hold commas), null when none. */
    tags: text('tags'),
    /** The agent session (`x-tollgate-session` or the agent's own header; src/endusers/session.ts), null when none. */
    session: text('session'),
    /** The config's name of the upstream that answered (or was tried last); null when never forwarded. */
    upstream: text('upstream'),
    /** Upstreams tried for the request, fallbacks included (1 when the first answered). */
    attempts: integer('attempts'),
    /** Failed tries an upstream may bill although another answered (a timeout after sending; 5xx of an upstream that bills errors). */
    billedAttempts: integer('billed_attempts'),
    /**
     * Which of the row's names its rollups count under `(other)` (past TOLLGATE_MAX_END_USERS or
     * TOLLGATE_MAX_TAGS that day): bit 0 the end user, bit 1 + i its i-th tag; null when none
     * (src/domain/rollup-names.ts). The row itself keeps its own end user and tags.
     */
    rollupFolded: integer('rollup_folded'),
    /** Which of its names must keep a row of their own whatever the bound (budgeted end user and tags; same bits); for the shipper. */
    rollupExact: integer('rollup_exact'),
  },
  (t) => [
    index('ledger_key_time').on(t.keyId, t.createdAt),
    // Requests in flight, per key or all (a small index: rows leave it when they settle).
    index('ledger_pending_key')
      .on(t.keyId, t.createdAt)
      .where(sql`status = 'pending'`),
    // The dashboard's "recent 429s" of a key: the newest few, without walking all its rows.
    index('ledger_key_429')
      .on(t.keyId, t.createdAt)
      .where(sql`http_status = 429`),
    // A session's rows (its budgets and reports read them: sessions have no rollup).
    index('ledger_key_session')
      .on(t.keyId, t.session, t.createdAt)
      .where(sql`session IS NOT NULL`),
  ],
);

export * from './schema-rollups.js';

/**
 * Stored Responses (POST /v1/responses) and the key that created each: a key
 * sees only its own through the lifecycle routes, and continues or refers to
 * only its own responses and their items (src/pipeline/ownership.ts). Background jobs also carry
 * a claim, so that one process polls a job until its ledger row is settled
 * and a restarted process picks up the jobs nobody polls (src/responses).
 */
export const responses = sqliteTable(
  'responses',
  {
    /** The upstream's response id (resp_…). */
    id: text('id').primaryKey(),
    keyId: text('key_id')
      .notNull()
      .references(() => apiKeys.id),
    /** The ledger row of the request that created it. */
    requestId: text('request_id').notNull(),
    createdAt: integer('created_at').notNull(),
    /** A background job (`background: true`) whose usage is not settled yet: polled upstream. */
    unsettled: integer('unsettled', { mode: 'boolean' }).notNull().default(false),
    /** A process polls the job until then (ms); 0 = nobody. */
    claimedUntil: integer('claimed_until').notNull().default(0),
    /** Deleted through the API: no longer found. */
    deletedAt: integer('deleted_at'),
    /**
     * Set on an item of a stored response (an output item, or an input item its listing showed):
     * the response it belongs to. A key may refer (`item_reference`) only to its own items.
     */
    itemOf: text('item_of'),
    /**
     * A response's input plus output tokens as its settled usage reported them: what continuing it
     * (`previous_response_id`) bills again as input. Null while unknown (running, or no usage).
     */
    billedTokens: integer('billed_tokens'),
  },
  (t) => [
    // Background jobs still to settle (a small index: rows leave it once settled).
    index('responses_unsettled')
      .on(t.claimedUntil)
      .where(sql`unsettled = 1`),
    // A deleted response takes its items with it.
    index('responses_items')
      .on(t.itemOf)
      .where(sql`item_of IS NOT NULL`),
  ],
);

export type TenantRow = typeof tenants.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type LedgerRow = typeof ledger.$inferSelect;

/**
 * Alerts (src/alerts): each alert is claimed once — this table when neither
 * PostgreSQL nor Redis is configured, so processes sharing the file do not
 * both send — and every delivery goes through the outbox, retried with
 * backoff by whichever process holds its short delivery claim.
 */
export const alertClaims = sqliteTable(
  'alert_claims',
  {
    /** What was alerted: owner, budget, period and threshold, or owner and hour. */
    id: text('id').primaryKey(),
    claimedAt: integer('claimed_at').notNull(),
    /** After this (ms) the row may be pruned: its period is long over. */
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('alert_claims_expires').on(t.expiresAt)],
);

export const alertOutbox = sqliteTable(
  'alert_outbox',
  {
    /** The event id and the webhook name. */
    id: text('id').primaryKey(),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    webhook: text('webhook').notNull(),
    /** The JSON body, exactly as signed and sent. */
    body: text('body').notNull(),
    createdAt: integer('created_at').notNull(),
    /** pending | delivered | failed */
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    /** A process is delivering it until then (ms); 0 = nobody. */
    claimedUntil: integer('claimed_until').notNull().default(0),
    lastError: text('last_error'),
    /** The receiver's last HTTP status. */
    lastStatus: integer('last_status'),
    deliveredAt: integer('delivered_at'),
  },
  (t) => [
    // Deliveries still to make (a small index: rows leave it once delivered or failed).
    index('alert_outbox_due')
      .on(t.nextAttemptAt)
      .where(sql`status = 'pending'`),
    index('alert_outbox_created').on(t.createdAt),
  ],
);

/**
 * Read-only dashboard tokens of one tenant (src/storage/tenant-tokens.ts).
 * Like keys, only the SHA-256 of the token and its visible prefix are kept.
 */
export const dashboardTokens = sqliteTable(
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
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [uniqueIndex('dashboard_tokens_hash_unique').on(t.tokenHash), index('dashboard_tokens_tenant').on(t.tenantId)],
);

/**
 * Results of `tollgate reconcile` (src/reconcile/): the report as JSON, the
 * newest shown on the dashboard. A few rows a day at most.
 */
export const reconciliations = sqliteTable(
  'reconciliations',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    createdAt: integer('created_at').notNull(),
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

/**
 * Batch input files (OpenAI Files API, purpose `batch`): which key uploaded
 * each and what its lines cost at worst, so creating a batch from it reserves
 * that much (src/storage/batches.ts).
 */
export const batchFiles = sqliteTable('batch_files', {
  /** The upstream's file id (file-…). */
  id: text('id').primaryKey(),
  keyId: text('key_id').notNull(),
  createdAt: integer('created_at').notNull(),
  filename: text('filename').notNull(),
  bytes: integer('bytes').notNull(),
  lines: integer('lines').notNull(),
  endpoint: text('endpoint').notNull(),
  model: text('model').notNull(),
  promptTokens: integer('prompt_tokens').notNull(),
  completionTokens: integer('completion_tokens').notNull(),
  costMicros: integer('cost_micros').notNull(),
  /** Deleted through the API: no longer found (the row stays, for the record). */
  deletedAt: integer('deleted_at'),
});

/**
 * Batch jobs (OpenAI batches, Anthropic message batches): which key created
 * each, which ledger row holds its reservation, and which process follows it
 * until it is settled (src/storage/batches.ts).
 */
export const batchJobs = sqliteTable(
  'batch_jobs',
  {
    /** The upstream's batch id (batch_… or msgbatch_…). */
    id: text('id').primaryKey(),
    /** openai | anthropic */
    provider: text('provider').notNull(),
    keyId: text('key_id').notNull(),
    tenantId: text('tenant_id'),
    /** The ledger row of its reservation. */
    requestId: text('request_id').notNull(),
    /** The node whose ledger holds that row: only its processes settle the job. */
    node: text('node').notNull(),
    createdAt: integer('created_at').notNull(),
    inputFileId: text('input_file_id'),
    model: text('model').notNull(),
    reservedMicros: integer('reserved_micros').notNull(),
    /** The status the upstream reported last. */
    status: text('status').notNull(),
    settledAt: integer('settled_at'),
    /** The process that follows the job (until `claimed_until`); null when nobody. */
    claimedBy: text('claimed_by'),
    /** Its claim holds until then (ms); 0 = nobody's. */
    claimedUntil: integer('claimed_until').notNull().default(0),
    /** Deleted through the API (Anthropic): no longer found, still settled. */
    deletedAt: integer('deleted_at'),
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
