/**
 * The composition root: every part of Tollgate built from the configuration, in one place.
 * `main.ts` serves what this builds; the tests and the benchmarks build it the same way,
 * overriding only what they must (a temp database, a fake upstream, a hand-moved clock).
 *
 * Building opens the database and touches no network; `start()` connects Redis, loads the
 * tokenizer and starts the background work; `close()` stops everything in order once the HTTP
 * server has stopped taking requests.
 */
import type { BudgetCheck } from './budgets/check.js';
import type { Hono } from 'hono';
import { storeAdminOps } from './admin/ops.js';
import { createAlerts, type Alerts } from './alerts/index.js';
import { createApp } from './app.js';
import type { AppEnv } from './app-env.js';
import { SharedBudgetStore } from './budgets/shared-budgets.js';
import { SpendTracker } from './budgets/spend-tracker.js';
import type { Config } from './config/index.js';
import type { LimitSnapshot } from './dashboard/index.js';
import type { ReadWorker } from './storage/sqlite/read-worker.js';
import { startCheckpointer, type Checkpointer } from './storage/sqlite/checkpointer.js';
import { openDatabase, type TollgateDatabase } from './storage/sqlite/open.js';
import { createReplica, type Replica } from './replica.js';
import { BodyIntake, LARGE_BODY_BYTES } from './http/body-intake.js';
import { closeEstimator, encodingForModel, warmEstimator, type EncodingName } from './estimate/index.js';
import { resolvePrice } from './estimate/prices.js';
import { KeyCache } from './keys/cache.js';
import { callerFor } from './keys/caller.js';
import { PolicyError } from './domain/policy.js';
import { SqliteKeyStore } from './storage/sqlite/keys.js';
import { openBatchStore, openKeyStore, openLedgerWriter, openSharedStorage, type Backend } from './storage/index.js';
import type { ReconciliationReport } from './reconcile/store.js';
import { buildReconciliation, type ReconcileSchedule } from './reconcile/from-config.js';
import type { LedgerWriter } from './storage/ledger.js';
import { createLimiter, IPC_TIMEOUT_MS, type CreatedLimiter } from './coordination/create-limiter.js';
import type { IpcClient } from './coordination/ipc-client.js';
import { ipcBudgetCounters } from './coordination/ipc-store.js';
import { InFlightLimits } from './limits/in-flight.js';
import { LiveLimits } from './dashboard/live-limits.js';
import { createLogger, type Logger } from './logger.js';
import { Metrics } from './metrics.js';
import type { PipelineDeps } from './pipeline/deps.js';
import { RequestEvents } from './pipeline/finished.js';
import { OpenRequests } from './pipeline/open-requests.js';
import { logRequests, recordMetrics, warnAssumedPrices } from './pipeline/observers.js';
import { createBackgroundResponses, type BackgroundResponses } from './responses/index.js';
import { createBatchJobs, type BatchJobs } from './batch-jobs/index.js';
import type { Upstream } from './upstreams/pool.js';
import { createRouter, type Router } from './upstreams/router.js';
import { createAnthropicUpstream } from './upstreams/anthropic-upstream.js';
import { createUpstreamProbe, probeTargetsOf, type UpstreamProbe } from './upstreams/probe.js';
import { SecretThrottle } from './http/secret-throttle.js';
import { tracingStarter, type TracingSdk } from './tracing/index.js';

/** Parts a caller supplies instead of building them from the config. */
export interface TollgateOverrides {
  readonly logger?: Logger;
  /** An open database (left open by `close()`); default: open `config.dbPath`. */
  readonly database?: TollgateDatabase;
  readonly upstream?: Upstream;
  /** Where /v1/messages goes; default: Anthropic's API from `config.anthropic`. */
  readonly anthropicUpstream?: Upstream;
  readonly metrics?: Metrics;
  /** Wall clock, ms since the epoch: ledger times, budget periods, the dashboard. */
  readonly now?: () => number;
  /** Monotonic clock of the in-memory buckets (tests move it by hand). */
  readonly limiterClock?: () => number;
  /** The dashboard's live view of a key's buckets; present but undefined = none ("not available"). */
  readonly limitSnapshot?: LimitSnapshot | undefined;
  /** A worker of `serve --workers N`: without Redis, limits and budgets are kept by the primary (main.ts). */
  readonly ipc?: IpcClient;
  /** Required when the config sets tracing: the SDK, `await loadTracing(config.tracing)` (src/tracing/index.ts), as main.ts does. */
  readonly tracingSdk?: TracingSdk;
}

export interface Tollgate {
  readonly app: Hono<AppEnv>;
  readonly config: Config;
  readonly logger: Logger;
  readonly database: TollgateDatabase;
  readonly keyStore: SqliteKeyStore;
  readonly keys: KeyCache;
  readonly ledger: LedgerWriter;
  readonly spend: SpendTracker;
  readonly limiter: CreatedLimiter;
  readonly liveLimits: LiveLimits;
  readonly metrics: Metrics;
  /** PostgreSQL's side of a replica (TOLLGATE_DATABASE_URL), else undefined. */
  readonly replica: Replica | undefined;
  readonly events: RequestEvents;
  /** The first upstream (TOLLGATE_UPSTREAM_URL's, or the config's first): background Responses are polled there. */
  readonly upstream: Upstream;
  /** Every upstream, routed by model (README, "Upstreams"). */
  readonly router: Router;
  /** The upstreams' start-up check, repeated for /readyz (src/upstreams/probe.ts). */
  readonly upstreamProbe: UpstreamProbe;
  /** Stored and background Responses (their owners, the poller that settles background jobs). */
  readonly responses: BackgroundResponses;
  /** Batch jobs: their routes and the follower that settles them. */
  readonly batches: BatchJobs;
  /** Budget and velocity alerts (config file `alerts`), else undefined. */
  readonly alerts: Alerts | undefined;
  /** Scheduled reconciliation (TOLLGATE_RECONCILE_EVERY with a provider admin key), else undefined. */
  readonly reconciler: ReconcileSchedule | undefined;
  /** What every stage of the request path is given. */
  readonly pipeline: PipelineDeps;
  /** The thread that reads the dashboard and the spend reports from SQLite (none on a replica or in memory). */
  readonly readWorker: ReadWorker | undefined;
  /** Flipped when shutting down: /readyz answers 503, connections close after their response. */
  readonly lifecycle: { shuttingDown: boolean };
  /** The per-address brake on guessing tokens, for every surface of the app and the metrics port (src/http/secret-throttle.ts). */
  readonly secretThrottle: SecretThrottle;
  /** Connects Redis, loads the tokenizer, starts key polling and WAL checkpoints. */
  start(): Promise<void>;
  /** Stops everything after the HTTP server: leases handed back, the ledger flushed, the database closed. */
  close(): Promise<void>;
}

export function buildTollgate(config: Config, overrides: TollgateOverrides = {}): Tollgate {
  const startTracing = tracingStarter(config.tracing, overrides.tracingSdk);
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const now = overrides.now ?? Date.now;
  const database = overrides.database ?? openDatabase(config.dbPath);
  const keyStore = new SqliteKeyStore(database, overrides.now);
  const keys = new KeyCache(keyStore, { pollMs: config.keyRefreshMs, onError: (error) => logger.error({ err: error }, 'key cache refresh failed') });
  const metrics = overrides.metrics ?? new Metrics({ keyLabel: config.metricsKeyLabel, prices: config.prices });
  const replica =
    config.databaseUrl === undefined
      ? undefined
      : createReplica(database, {
          url: config.databaseUrl,
          logger,
          registry: metrics.registry,
          retentionDays: config.ledgerRetentionDays,
          nameBounds: config.nameBounds,
          onKeysChanged: () => keys.refresh(),
        });
  const backend: Backend = replica === undefined ? { kind: 'sqlite', database } : { kind: 'postgres', database, pool: replica.pool };
  // On a replica, budgets count every node's spend (src/storage/postgres/spend-source.ts).
  const spend = new SpendTracker(database, replica === undefined ? {} : { refreshMs: 500, source: replica.spend });
  const limiter = createLimiter(config, {
    logger,
    metrics,
    ...(overrides.limiterClock ? { clock: overrides.limiterClock } : {}),
    ...(overrides.ipc ? { ipc: overrides.ipc } : {}),
  });
  // Budgets are shared wherever limits are: Redis, or the primary of `serve --workers N`.
  const budgetCounters = limiter.redis ?? (limiter.store === 'ipc' ? ipcBudgetCounters(overrides.ipc!, IPC_TIMEOUT_MS) : undefined);
  const sharedBudgets =
    budgetCounters === undefined
      ? undefined
      : {
          failMode: config.failMode,
          ...(replica === undefined
            ? {}
            : {
                // Keys, tenants, end users and tags alike: PostgreSQL's rollups plus this node's unshipped spend.
                exactSeed: async (check: BudgetCheck) => replica.spend.exact(check.scope, check.budget.period, now()),
              }),
          store: new SharedBudgetStore(budgetCounters, {
            timeoutMs: config.redis?.timeoutMs ?? IPC_TIMEOUT_MS,
            onCall: (ok) => {
              if (limiter.store !== 'redis') return;
              metrics.redisCalls.inc({ op: 'budget' });
              if (!ok) metrics.redisFailures.inc({ op: 'budget' });
            },
            onError: (error) =>
              logger.warn(
                { message: (error as Error).message },
                `budget reservation in ${limiter.store === 'redis' ? 'Redis' : 'the primary'} failed; budgets follow the fail mode`,
              ),
          }),
        };
  const ledger = openLedgerWriter(backend, {
    spend,
    // Refusals are counted under the price table's model name, and those naming
    // a model the table does not know share one rollup row: a client picks the name.
    refusalRollupModel: (model) => {
      const price = resolvePrice(model, config.prices);
      return price.known ? price.model : '(other)';
    },
    onBusy: () => metrics.ledgerLockWaits.inc(),
    refusalRowsPerMinute: config.refusalRowsPerMinute,
    nameBounds: config.nameBounds,
    onError: (error) => {
      metrics.ledgerFailures.inc();
      logger.error({ err: error }, 'ledger commit failed; retrying');
    },
    onCommit: (stats) => {
      metrics.ledgerRows.inc(stats.rows);
      metrics.ledgerWriteDuration.observe(stats.durationMs / 1000, []);
      if (stats.foldedEndUsers > 0) metrics.rollupFolded.inc({ kind: 'end_user' }, stats.foldedEndUsers);
      if (stats.foldedTags > 0) metrics.rollupFolded.inc({ kind: 'tag' }, stats.foldedTags);
      if (stats.refusedEndUsers > 0) metrics.rollupFolded.inc({ kind: 'end_user_refused' }, stats.refusedEndUsers);
    },
  });
  // An override replaces the shorthand's one upstream (tests, the demo); with a config's list, each upstream has its own pool.
  const router = createRouter(config.upstreams, overrides.upstream);
  const first = router.upstreams.find((u) => u.spec.kind !== 'anthropic') ?? router.upstreams[0]!;
  const upstream: Upstream = { send: (request) => first.send(request), close: () => router.close() };
  const anthropic = overrides.anthropicUpstream ?? createAnthropicUpstream({ ...config.upstream, ...config.anthropic });
  // Anthropic's default upstream is asked only when it has a key (or a test's stands in): else it is not in use.
  const probedAnthropic =
    overrides.anthropicUpstream !== undefined || config.anthropic.apiKey !== undefined ? { upstream: anthropic, url: config.anthropic.url } : undefined;
  const upstreamProbe = createUpstreamProbe(probeTargetsOf(router, probedAnthropic), { logger, now: Date.now });
  const events = new RequestEvents((error) => logger.error({ err: error }, 'a request observer failed'));
  const liveLimits = new LiveLimits(limiter.limiter, config.globalLimits, keys, (id) => keyStore.authKeyById(id));
  events.subscribe(recordMetrics(metrics, limiter.store));
  events.subscribe(logRequests(logger));
  events.subscribe(warnAssumedPrices(logger));
  events.subscribe((event) => liveLimits.noteCaller(event.caller));
  const tracing = startTracing?.(logger, events);
  metrics.sampleBucketsWith(() => liveLimits.samples((key) => metrics.keyLabel(key)));
  const alerts =
    config.alerts === undefined
      ? undefined
      : createAlerts({
          settings: config.alerts,
          database,
          spend,
          logger,
          now,
          redis: limiter.redis,
          backend,
          // Pauses are written where keys live (PostgreSQL on replicas) and read back from this node's copy.
          runaway: { keys: openKeyStore(backend, { now }), keyById: (id) => keyStore.authKeyById(id) },
        });
  if (alerts !== undefined) events.subscribe(alerts.listener);

  const responses = createBackgroundResponses({
    database,
    upstream,
    ledger,
    events,
    prices: config.prices,
    now,
    logger,
    settings: config.backgroundPoll,
    backend,
  });
  const batches = createBatchJobs({
    store: openBatchStore(backend),
    upstream,
    anthropic: probedAnthropic?.upstream,
    ledger,
    prices: config.prices,
    now,
    logger,
    settings: config.batches,
    databasePath: database.path === ':memory:' ? undefined : database.path,
    // A batch's spend is no request's: the alert monitor is told of it here.
    onSettled: (keyId) => {
      const key = keyStore.authKeyById(keyId);
      if (alerts === undefined || key === undefined || key.policy instanceof PolicyError) return;
      alerts.monitor.noteSpend(callerFor(key, keys));
    },
  });
  const pipeline: PipelineDeps = {
    keys,
    maxBodyBytes: config.maxBodyBytes,
    estimate: {
      prices: config.prices,
      defaultMaxCompletionTokens: config.defaultMaxCompletionTokens,
      fallbackMaxOutputTokens: config.fallbackMaxOutputTokens,
      unknownModels: config.unknownModels,
      ...(config.unseenInputTokens === undefined ? {} : { unseenInputTokens: config.unseenInputTokens }),
    },
    minOutputTokens: config.minOutputTokens,
    limiter: limiter.limiter,
    globalLimits: config.globalLimits,
    spend,
    sharedBudgets,
    ledger,
    upstream,
    anthropic,
    router,
    events,
    now,
    responses: responses.hooks,
    batches,
    inFlight: new InFlightLimits({ defaultKeyMax: config.maxInFlight, maxWaitMs: config.upstream.queueTimeoutMs }),
    open: new OpenRequests(),
    ...(tracing === undefined ? {} : { tracing: tracing.tracer }),
    intake: new BodyIntake({
      largeBytes: LARGE_BODY_BYTES,
      largePerKey: config.largeBodiesPerKey,
      memoryBytes: config.bodyMemoryBytes,
      maxWaitMs: config.upstream.queueTimeoutMs,
    }),
  };
  const lifecycle = { shuttingDown: false };
  const secretThrottle = new SecretThrottle();
  // The dashboard's and the spend reports' SQLite reads run on a worker thread, never on the event
  // loop the requests share (src/storage/read-thread.ts); a replica reads PostgreSQL, every node's rows.
  const shared = openSharedStorage<ReconciliationReport>(backend, overrides.now === undefined ? {} : { now: overrides.now });
  const readWorker = shared.readWorker;
  const reconciler = buildReconciliation(config, { backend, limiter, shared, alerts, metrics, logger, now });
  const app = createApp({
    pipeline,
    logger,
    metrics,
    admin: {
      ops: storeAdminOps(shared, {
        // The node that made a change sees it before answering (a replica: once its copy has pulled it).
        onChange: () => (replica === undefined ? keys.refresh() : replica.keySync.kick()),
        readSpend: (query, at) => shared.spend.spend(query, at),
        now,
      }),
      token: config.adminToken,
      admins: shared.admins,
    },
    database,
    // Tenants' dashboard tokens and reconciliations where every node sees them.
    shared: { dashboardTokens: shared.dashboardTokens, reconciliations: shared.reconciliations, requests: shared.requests },
    dashboardReads: shared.dashboard,
    ledgerExport: shared.ledgerExport,
    ...('limitSnapshot' in overrides
      ? overrides.limitSnapshot
        ? { limitSnapshot: overrides.limitSnapshot }
        : {}
      : { limitSnapshot: (keyId: string) => liveLimits.forKey(keyId) }),
    lifecycle,
    upstreamProbe,
    ...(overrides.now ? { now: overrides.now } : {}),
    metricsAccess: { token: config.metrics.token, ownPort: config.metrics.port !== undefined },
    trustedProxies: config.trustedProxies,
    secretThrottle,
  });

  let checkpointer: Checkpointer | undefined;
  return {
    app,
    config,
    logger,
    database,
    keyStore,
    keys,
    ledger,
    spend,
    limiter,
    liveLimits,
    metrics,
    replica,
    events,
    upstream,
    router,
    upstreamProbe,
    responses,
    batches,
    alerts,
    reconciler,
    pipeline,
    readWorker,
    lifecycle,
    secretThrottle,
    async start() {
      keys.start();
      await replica?.start();
      checkpointer = startCheckpointer(database, { onError: (message) => logger.warn({ message }, 'ledger checkpoint failed') });
      await limiter.connect();
      // Load every tokenizer the price table's models use (and the one unknown
      // models get) before the server listens: loading one takes ~0.3–1 s of
      // the event loop, which otherwise lands on the first requests.
      const encodings = new Set<EncodingName>(['o200k_base', ...Object.keys(config.prices.models).map((model) => encodingForModel(model))]);
      await warmEstimator({ startWorkers: true, encodings: [...encodings] });
      // Background jobs left unsettled by an earlier process are polled again.
      responses.start();
      batches.start();
      alerts?.start();
      reconciler?.start();
      // Off the request path: a rejected provider key or a base URL without /v1 is logged loudly (src/upstreams/probe.ts).
      void upstreamProbe.probe();
    },
    async close() {
      // Requests still read after their client left, or still waiting for their upstream: stopped
      // and settled at their reservation (src/pipeline/settle.ts), never left pending.
      const stopped = pipeline.open!.stopAll((error) => logger.error({ err: error }, 'an open request could not be stopped'));
      if (stopped > 0) logger.warn({ requests: stopped }, 'requests still open at shutdown: upstream stopped, settled at their reservation');
      // Unsettled background jobs stay pending in the ledger; the next start takes them over.
      responses.close();
      await batches.close();
      await reconciler?.close();
      await upstream.close();
      // Before Redis and the database close: the last requests' alerts are claimed and queued.
      await alerts?.close();
      await anthropic.close();
      keys.stop();
      // Hand Redis leases back so other nodes can use them at once.
      await limiter.close();
      if (!ledger.close()) logger.error({ queued: ledger.queueDepth }, 'ledger rows could not be written at shutdown');
      // Ship what the last requests wrote; anything left ships on the next start.
      await replica?.close();
      await checkpointer?.stop();
      await shared.close();
      await tracing?.shutdown(); // the last requests' spans, ended and exported
      if (overrides.database === undefined) database.close();
      await closeEstimator();
    },
  };
}
