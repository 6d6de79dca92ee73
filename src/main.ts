/**
 * Boots Tollgate: builds the parts from the config, serves the app with
 * @hono/node-server, and shuts down cleanly — stop accepting, let in-flight
 * requests and streams finish up to a deadline, then close what is left.
 */
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { createLogger, flushLogger, type Logger } from './logger.js';
import { createUpstream } from './proxy/upstream.js';
import { openDatabase } from './ledger/db.js';
import { KeyStore } from './keys/store.js';
import { KeyCache } from './keys/cache.js';
import { LedgerWriter } from './ledger/writer.js';
import { startCheckpointer } from './ledger/checkpointer.js';
import { localAdminOps } from './admin/ops.js';
import { closeEstimator, warmEstimator } from './estimate/index.js';
import { Metrics } from './metrics.js';
import { SpendTracker } from './ledger/spend-tracker.js';
import { RedisBudgetStore } from './ledger/redis-budgets.js';
import { createLimiter } from './limits/stores/create.js';
import { snapshotLimits } from './proxy/admission.js';
import { callerFor, type Caller } from './keys/auth.js';

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** Graceful stop; resolves when everything is closed. Safe to call twice. */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
}

/** Starts the proxy on `config.host:config.port` (port 0 picks a free one). */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const database = openDatabase(config.dbPath);
  const keyStore = new KeyStore(database);
  const keys = new KeyCache(keyStore, { pollMs: config.keyRefreshMs, onError: (error) => logger.error({ err: error }, 'key cache refresh failed') });
  keys.start();
  const metrics = new Metrics({ keyLabel: config.metricsKeyLabel });
  const spend = new SpendTracker(database);
  const limiter = await createLimiter(config, { logger, metrics });
  const redisBudgets =
    limiter.redis === undefined
      ? undefined
      : new RedisBudgetStore(limiter.redis, {
          timeoutMs: config.redis?.timeoutMs ?? 1000,
          onError: (error) => logger.warn({ message: (error as Error).message }, 'budget reservation in Redis failed; budgets follow the fail mode'),
        });
  const recentCallers = new Map<string, Caller>();
  metrics.sampleBucketsWith(function* sampleBuckets() {
    for (const caller of recentCallers.values()) {
      for (const entry of snapshotLimits(limiter.limiter, caller, config.globalLimits)) {
        yield { key: entry.level === 'key' ? metrics.keyLabel(caller.key) : `${entry.level}`, limit: entry.limitName, ratio: entry.burst > 0 ? entry.remaining / entry.burst : 0 };
      }
    }
  });
  /** The dashboard's live view of a key's buckets. */
  const limitSnapshot = (keyId: string) => {
    const key = keyStore.authKeyById(keyId);
    if (key === undefined) return [];
    let caller: Caller;
    try {
      caller = callerFor(key, keys);
    } catch {
      return []; // a corrupt stored policy: nothing live to show
    }
    return snapshotLimits(limiter.limiter, caller, config.globalLimits).map((entry) => ({
      limitName: entry.level === 'key' ? entry.limitName : `${entry.level} ${entry.limitName}`,
      remaining: entry.remaining,
      burst: entry.burst,
      unit: entry.unit,
    }));
  };
  const ledger = new LedgerWriter(database, {
    spend,
    onError: (error) => {
      metrics.ledgerFailures.inc();
      logger.error({ err: error }, 'ledger commit failed; retrying');
    },
    onCommit: (stats) => {
      metrics.ledgerRows.inc(stats.rows);
      metrics.ledgerWriteDuration.observe(stats.durationMs / 1000);
    },
  });
  const checkpointer = startCheckpointer(config.dbPath, database.sqlite, { onError: (message) => logger.warn({ message }, 'ledger checkpoint failed') });
  // Load the common tokenizer before the first request instead of during it.
  await warmEstimator({ startWorkers: true });
  const upstream = createUpstream(config.upstream);
  const lifecycle = { shuttingDown: false };
  const app = createApp({
    upstream,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    keys,
    ledger,
    estimate: { prices: config.prices, defaultMaxCompletionTokens: config.defaultMaxCompletionTokens },
    admin: { ops: localAdminOps(database, { onChange: () => keys.refresh() }), token: config.adminToken },
    database,
    metrics,
    admission: {
      limiter: limiter.limiter,
      spend,
      globalLimits: config.globalLimits,
      storeName: limiter.store,
      recentCallers,
      ...(redisBudgets === undefined ? {} : { redisBudgets }),
      failMode: config.failMode,
    },
    limitSnapshot,
    lifecycle,
  });

  const server = await new Promise<Server>((resolve, reject) => {
    const created = serve(
      {
        fetch: app.fetch,
        port: config.port,
        hostname: config.host,
        serverOptions: {
          // Slow clients: the whole request must arrive within requestTimeout,
          // the headers sooner. Node enforces both only when it checks its
          // connections, every 30 s by default: check often enough to matter.
          requestTimeout: config.requestTimeoutMs,
          headersTimeout: Math.min(config.requestTimeoutMs, 30_000),
          connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.requestTimeoutMs / 4))),
          // Longer than common load-balancer idle timeouts (60 s), so the LB closes first.
          keepAliveTimeout: 65_000,
        },
      },
      () => resolve(created as Server),
    ) as Server;
    created.once('error', reject);
  });

  let inFlight = 0;
  let drained: (() => void) | undefined;
  server.on('request', (_req, res) => {
    inFlight += 1;
    res.once('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drained?.();
    });
  });

  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info(
    { url, upstream: config.upstream.url, upstreamKeyConfigured: config.upstream.apiKey !== undefined, db: config.dbPath, admin: config.adminToken === undefined ? 'disabled' : 'enabled' },
    'tollgate listening',
  );

  let closing: Promise<void> | undefined;
  async function shutDown(): Promise<void> {
    lifecycle.shuttingDown = true;
    logger.info({ inFlight }, 'shutting down: no new connections, waiting for in-flight requests');
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      const finished = new Promise<void>((resolve) => {
        drained = resolve;
      });
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), config.shutdownTimeoutMs);
      });
      const result = await Promise.race([finished, deadline]);
      clearTimeout(timer);
      if (result === 'timeout') logger.warn({ inFlight }, 'shutdown deadline reached; closing remaining connections');
    }
    server.closeAllConnections();
    await stopped;
    await upstream.close();
    keys.stop();
    // Hand Redis leases back so other nodes can use them at once.
    await limiter.close();
    if (!ledger.close()) logger.error({ queued: ledger.queueDepth }, 'ledger rows could not be written at shutdown');
    await checkpointer.stop();
    database.close();
    await closeEstimator();
    logger.info('shutdown complete');
    await flushLogger(logger);
  }

  return {
    url,
    port,
    close() {
      closing ??= shutDown();
      return closing;
    },
  };
}
