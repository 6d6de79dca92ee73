/**
 * Boots Tollgate: builds the parts from the config (tollgate.ts), serves the
 * app with @hono/node-server, and shuts down cleanly — stop accepting, let in-flight
 * requests and streams finish up to a deadline, then close what is left.
 *
 * With `serve --workers N` (startCluster) a primary forks N such servers on one
 * port (node:cluster) and keeps, without Redis, the buckets and budget counters
 * they lease from over IPC (src/coordination/ipc-primary.ts).
 */
import { createAdaptorServer, serve } from '@hono/node-server';
import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AggregatorRegistry } from 'prom-client';
import { reportWarnings, type Config } from './config/index.js';
import { openDatabase } from './storage/sqlite/open.js';
import { createLogger, flushLogger, type Logger } from './logger.js';
import { createMetricsApp } from './app.js';
import { ConnectionGuard, type ConnectionLimits } from './http/connection-guard.js';
import type { IpcClient } from './coordination/ipc-client.js';
import { LimitsPrimary } from './coordination/ipc-primary.js';
import { buildTollgate } from './tollgate.js';
import { loadTracing } from './tracing/index.js';
import { restoreFastPrototypes } from './fast-prototypes.js';
import { redactUrl } from './redact-url.js';
import { assertPortsFree, listenFailure } from './listen-failure.js';
import { deprioritizeHelperThreads } from './helper-threads.js';

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** Where /metrics is served when TOLLGATE_METRICS_PORT is set (else on `url`). */
  readonly metricsUrl: string | undefined;
  /** Graceful stop; resolves when everything is closed. Safe to call twice. */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
  /** This process is a worker of `serve --workers N`: its channel to the primary. */
  readonly ipc?: IpcClient;
}

/** How long a worker's /metrics waits for the primary's aggregate (prom-client gives up on workers after 5 s). */
const METRICS_TIMEOUT_MS = 6000;

/** Starts the proxy on `config.host:config.port` (port 0 picks a free one). */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  // The OpenTelemetry SDK is read only when an endpoint is set (src/tracing/index.ts).
  const tracingSdk = await loadTracing(config.tracing);
  const tollgate = buildTollgate(config, {
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.ipc ? { ipc: options.ipc } : {}),
    ...(tracingSdk ? { tracingSdk } : {}),
  });
  // Every module the server uses is loaded by now: one may have left String.prototype slow (src/fast-prototypes.ts).
  restoreFastPrototypes();
  const { app, logger, lifecycle } = tollgate;
  const ipc = options.ipc;
  if (ipc === undefined) reportWarnings(config.warnings, (message) => logger.warn(message));
  if (ipc !== undefined) {
    // /metrics lands on any worker: it answers for all of them, aggregated by the primary.
    AggregatorRegistry.setRegistries([tollgate.metrics.registry]);
    new AggregatorRegistry(); // answers the primary's requests for this worker's metrics
    tollgate.metrics.renderWith(() => ipc.call('metrics', {}, METRICS_TIMEOUT_MS));
  }
  await tollgate.start();

  const limits = connectionLimits(config);
  const headersTimeoutMs = limits.headersTimeoutMs;
  const guard = new ConnectionGuard(limits);
  // Nothing may keep the process alive after a failed start: close what start() opened, then say why.
  const failStart = async (error: unknown, opened?: Server): Promise<never> => {
    if (opened !== undefined) await new Promise<void>((resolve) => opened.close(() => resolve()));
    await tollgate.close().catch((closeError: unknown) => logger.error({ err: closeError }, 'closing after a failed start failed'));
    await flushLogger(logger);
    throw listenFailure(error, config);
  };
  const server = await new Promise<Server>((resolve, reject) => {
    const created = createAdaptorServer({
      fetch: app.fetch,
      hostname: config.host,
      serverOptions: {
        // Slow clients: the whole request must arrive within requestTimeout,
        // the headers sooner. Node enforces both only when it checks its
        // connections, every 30 s by default: check often enough to matter.
        // (A connection that sends nothing at all is the guard's, below.)
        requestTimeout: config.requestTimeoutMs,
        headersTimeout: headersTimeoutMs,
        connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
        // Longer than common load-balancer idle timeouts (60 s), so the LB closes first.
        keepAliveTimeout: 65_000,
      },
    }) as Server;
    created.once('error', reject);
    guard.attach(created);
    // serve() would listen with Node's default backlog (511); see TOLLGATE_LISTEN_BACKLOG in src/config/env.ts.
    created.listen({ port: config.port, host: config.host, backlog: config.listenBacklog }, () => resolve(created));
  }).catch((error: unknown) => failStart(error));

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
  const hostPart = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${hostPart}:${port}`;
  // /metrics on its own port: a scraper's network need not reach the proxy's.
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : await new Promise<Server>((resolve, reject) => {
          const created = serve(
            {
              fetch: createMetricsApp(tollgate.metrics, tollgate.ledger, config.metrics.token, {
                throttle: tollgate.secretThrottle,
                trustedProxies: config.trustedProxies,
                now: Date.now,
              }).fetch,
              port: config.metrics.port!,
              hostname: config.host,
            },
            () => resolve(created as Server),
          ) as Server;
          created.once('error', reject);
        }).catch((error: unknown) => failStart(error, server));
  // The metrics port's connections hold descriptors of the same process: one guard for both.
  if (metricsServer !== undefined) guard.attach(metricsServer);
  const metricsUrl = metricsServer === undefined ? undefined : `http://${hostPart}:${(metricsServer.address() as AddressInfo).port}`;
  const guardReport = reportGuard(guard, logger);
  // The loop serves every request; the helper threads wait for it on a shared core (src/helper-threads.ts).
  const helpers = deprioritizeHelperThreads(config.helperNice);
  logger.info(
    {
      url,
      // Where, never with what: credentials in a URL are shown as *** (src/redact-url.ts).
      upstream: redactUrl(config.upstream.url),
      upstreamKeyConfigured: config.upstream.apiKey !== undefined,
      db: config.dbPath,
      ...(config.databaseUrl === undefined ? {} : { database: redactUrl(config.databaseUrl) }),
      ...(config.redis === undefined ? {} : { redis: config.redis.urls.map(redactUrl) }),
      admin: config.adminToken === undefined ? 'disabled' : 'enabled',
      metrics: metricsUrl ?? url,
      metricsToken: config.metrics.token === undefined ? 'none' : 'required',
      maxConnections: limits.maxConnections,
      maxConnectionsPerAddress: limits.maxPerAddress,
    },
    'tollgate listening',
  );

  let closing: Promise<void> | undefined;
  async function shutDown(): Promise<void> {
    lifecycle.shuttingDown = true;
    clearInterval(guardReport);
    helpers.stop();
    // Requests whose client left are still read for their usage (src/pipeline/relay.ts): waited for too.
    const open = tollgate.pipeline.open!;
    logger.info({ inFlight, open: open.size }, 'shutting down: no new connections, waiting for in-flight requests');
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (inFlight > 0 || open.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const answered = new Promise<void>((resolve) => {
        if (inFlight === 0) resolve();
        else drained = resolve;
      });
      const finished = answered.then(() => open.idle());
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), config.shutdownTimeoutMs);
      });
      const result = await Promise.race([finished, deadline]);
      clearTimeout(timer);
      if (result === 'timeout') logger.warn({ inFlight, open: open.size }, 'shutdown deadline reached; closing remaining connections');
    }
    server.closeAllConnections();
    await stopped;
    if (metricsServer !== undefined) {
      const metricsStopped = new Promise<void>((resolve) => metricsServer.close(() => resolve()));
      metricsServer.closeAllConnections();
      await metricsStopped;
    }
    await tollgate.close();
    logger.info('shutdown complete');
    await flushLogger(logger);
  }

  return {
    url,
    port,
    metricsUrl,
    close() {
      closing ??= shutDown();
      return closing;
    },
  };
}

/**
 * The connection guard's limits (src/http/connection-guard.ts). Unset caps come from the process's
 * open-file limit: each connection holds a descriptor, and upstream connections, the database,
 * logs and worker threads need theirs, so clients get what is left after a quarter (at least 1,024,
 * at most half); one address gets a quarter of that.
 */
export function connectionLimits(config: Config, fileLimit: number | undefined = openFileLimit()): ConnectionLimits {
  const files = fileLimit ?? 16_384;
  const reserve = Math.min(Math.floor(files / 2), Math.max(1024, Math.floor(files / 4)));
  const maxConnections = config.connections.max ?? Math.max(64, files - reserve);
  return {
    maxConnections,
    maxPerAddress: config.connections.perAddress ?? Math.max(16, Math.floor(maxConnections / 4)),
    // Node requires headersTimeout ≤ requestTimeout.
    headersTimeoutMs: Math.min(config.connections.headersTimeoutMs, config.requestTimeoutMs),
    trusted: config.trustedProxies,
  };
}

/** How often the connection guard's refusals are logged, at most. */
const GUARD_REPORT_MS = 10_000;

/**
 * A warning, at most every 10 s, when the connection guard has turned connections away or closed
 * them to make room since the last one: the signature of a connection flood.
 */
function reportGuard(guard: ConnectionGuard, logger: Logger): NodeJS.Timeout {
  let last = guard.stats;
  const timer = setInterval(() => {
    const now = guard.stats;
    const turnedAway = now.refusedPerAddress + now.refusedTotal + now.evicted - (last.refusedPerAddress + last.refusedTotal + last.evicted);
    if (turnedAway > 0) {
      logger.warn(
        {
          open: now.open,
          refusedPerAddress: now.refusedPerAddress - last.refusedPerAddress,
          refusedTotal: now.refusedTotal - last.refusedTotal,
          evicted: now.evicted - last.evicted,
          headersTimedOut: now.headersTimedOut - last.headersTimedOut,
        },
        'connections turned away by the connection caps (TOLLGATE_MAX_CONNECTIONS, TOLLGATE_MAX_CONNECTIONS_PER_ADDRESS)',
      );
    }
    last = now;
  }, GUARD_REPORT_MS);
  timer.unref();
  return timer;
}

/**
 * The process's limit on open files (Linux; Node raises its soft limit to the hard one at start),
 * or undefined where it cannot be read.
 */
function openFileLimit(): number | undefined {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (match === null) return undefined;
    return match[1] === 'unlimited' ? 1_048_576 : Number(match[1]);
  } catch {
    return undefined;
  }
}

export interface RunningCluster {
  /** Where the workers listen (all on one port). */
  readonly url: string;
  readonly port: number;
  /** Process ids of the workers now running. */
  workerPids(): number[];
  /** Drains every worker (each as a single server does on SIGTERM), then stops. Safe to call twice. */
  close(): Promise<void>;
}

/** The message a worker drains and exits on (serve.ts). */
export const DRAIN_MESSAGE = { tollgate: 'drain' } as const;

/** A worker that dies this soon after it started counts towards the restart back-off. */
const QUICK_EXIT_MS = 5000;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * The primary of `tollgate serve --workers N`: migrates the database once,
 * forks N workers that serve one port, answers their lease and budget calls
 * (unless Redis holds them), aggregates /metrics, restarts a worker that dies,
 * and on close drains them all. Resolves once every worker listens.
 */
export async function startCluster(config: Config, options: { workers: number; logger?: Logger }): Promise<RunningCluster> {
  const logger = options.logger ?? createLogger(config.logLevel);
  reportWarnings(config.warnings, (message) => logger.warn(message));
  await assertPortsFree(config);
  // Migrate here, once, so workers starting together never race to.
  openDatabase(config.dbPath).close();
  const aggregator = new AggregatorRegistry();
  const primary = new LimitsPrimary({ metrics: () => aggregator.clusterMetrics() });
  let stopping = false;
  let quickExits = 0;
  let listening: ((address: { port: number }) => void) | undefined;
  let failedToStart: ((error: Error) => void) | undefined;
  const started = new Map<Worker, number>();

  const fork = (): Worker => {
    const worker = cluster.fork();
    started.set(worker, Date.now());
    primary.serve(worker);
    worker.once('listening', (address) => {
      logger.info({ worker: worker.id, pid: worker.process.pid }, 'worker listening');
      listening?.(address);
    });
    return worker;
  };

  cluster.on('exit', (worker, code, signal) => {
    const startedAt = started.get(worker) ?? 0;
    started.delete(worker);
    if (stopping) return;
    if (failedToStart !== undefined) {
      failedToStart(new Error(`worker ${worker.id} exited (${signal ?? code}) before it listened`));
      return;
    }
    // Its leases lapse at expiry (under-admission only); its pending ledger rows stay for the ledger's own recovery.
    quickExits = Date.now() - startedAt < QUICK_EXIT_MS ? quickExits + 1 : 0;
    const delay = quickExits === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** (quickExits - 1));
    logger.error({ worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delay }, 'worker exited; starting another');
    setTimeout(() => {
      if (!stopping) fork();
    }, delay).unref();
  });

  const port = await new Promise<number>((resolve, reject) => {
    let count = 0;
    listening = (address) => {
      count += 1;
      if (count === options.workers) resolve(address.port);
    };
    failedToStart = reject;
    for (let i = 0; i < options.workers; i++) fork();
  }).catch(async (error: unknown) => {
    stopping = true;
    for (const worker of started.keys()) worker.process.kill('SIGKILL');
    primary.close();
    throw error;
  });
  listening = undefined;
  failedToStart = undefined;

  const hostPart = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${hostPart}:${port}`;
  const workerPids = () => [...started.keys()].map((worker) => worker.process.pid!);
  logger.info({ url, workers: options.workers, pids: workerPids(), limits: config.redis === undefined ? 'primary' : 'redis' }, 'tollgate workers listening');

  let closing: Promise<void> | undefined;
  async function shutDown(): Promise<void> {
    stopping = true;
    const workers = [...started.keys()];
    logger.info({ workers: workers.length }, 'shutting down: draining every worker');
    const exited = workers.map((worker) => new Promise<void>((resolve) => (worker.isDead() ? resolve() : worker.once('exit', () => resolve()))));
    for (const worker of workers) {
      try {
        worker.send(DRAIN_MESSAGE);
      } catch {
        worker.process.kill('SIGTERM');
      }
    }
    // A worker drains for up to the shutdown timeout, then closes; past a grace beyond that it is killed.
    const grace = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, config.shutdownTimeoutMs + 10_000);
    await Promise.all(exited);
    clearTimeout(grace);
    primary.close();
    logger.info('shutdown complete');
    await flushLogger(logger);
  }

  return {
    url,
    port,
    workerPids,
    close() {
      closing ??= shutDown();
      return closing;
    },
  };
}
