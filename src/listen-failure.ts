/**
 * What `tollgate serve` says when it cannot listen: one line naming the port and the setting
 * to change, instead of a bare EADDRINUSE from a process that then keeps running.
 */
import { createServer } from 'node:net';
import type { Config } from './config/index.js';

/**
 * A listen error as one line that says what to change: a port in use is most often
 * another Tollgate (or the same one started twice).
 */
export function listenFailure(error: unknown, config: Config): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const port = (error as { port?: number }).port;
  const variable = port !== undefined && port === config.metrics.port && port !== config.port ? 'TOLLGATE_METRICS_PORT' : 'TOLLGATE_PORT';
  if (code === 'EADDRINUSE') return new Error(`port ${port ?? config.port} is in use (another Tollgate?) — set ${variable}`);
  if (code === 'EACCES') return new Error(`port ${port ?? config.port} needs privileges this process lacks — set ${variable} (above 1023)`);
  if (code === 'EADDRNOTAVAIL') return new Error(`address ${config.host} is not one of this machine's — set TOLLGATE_HOST`);
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Rejects with listenFailure's line when a port the workers will share is taken: the primary
 * checks before forking, so the user reads the reason rather than "a worker exited".
 */
export async function assertPortsFree(config: Config): Promise<void> {
  const ports = [config.port, ...(config.metrics.port === undefined || config.metrics.port === config.port ? [] : [config.metrics.port])];
  for (const port of ports) {
    if (port === 0) continue;
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', (error) => reject(listenFailure(error, config)));
      probe.listen({ port, host: config.host, exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}
