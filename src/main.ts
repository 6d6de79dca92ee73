/**
 * Boots Tollgate: builds the parts from the config (tollgate.ts), serves the
 * app with @hono/node-server, and shuts down cleanly — stop accepting, let in-flight
 * requests and streams finish up to a deadline, then close what is left.
 */
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { flushLogger, type Logger } from './logger.js';
import { createMetricsApp } from './app.js';
import { buildTollgate } from './tollgate.js';

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
}

/** Starts the proxy on `config.host:config.port` (port 0 picks a free one). */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const tollgate = buildTollgate(config, options.logger ? { logger: options.logger } : {});
  const { app, logger, lifecycle } = tollgate;
  await tollgate.start();

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
  const hostPart = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${hostPart}:${port}`;
  // /metrics on its own port: a scraper's network need not reach the proxy's.
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : await new Promise<Server>((resolve, reject) => {
          const created = serve(
            { fetch: createMetricsApp(tollgate.metrics, tollgate.ledger, config.metrics.token).fetch, port: config.metrics.port!, hostname: config.host },
            () => resolve(created as Server),
          ) as Server;
          created.once('error', reject);
        });
  const metricsUrl = metricsServer === undefined ? undefined : `http://${hostPart}:${(metricsServer.address() as AddressInfo).port}`;
  logger.info(
    {
      url,
      upstream: config.upstream.url,
      upstreamKeyConfigured: config.upstream.apiKey !== undefined,
      db: config.dbPath,
      admin: config.adminToken === undefined ? 'disabled' : 'enabled',
      metrics: metricsUrl ?? url,
      metricsToken: config.metrics.token === undefined ? 'none' : 'required',
    },
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
