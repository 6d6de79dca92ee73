/**
 * Builds the limiter the configuration asks for — in-memory, or escrow leases
 * on Redis (a single server or a Cluster) — with its observer wired to the
 * logs and metrics. The one place that opens Redis connections for limits.
 */
import { Cluster, Redis } from 'ioredis';
import type { Counter, Gauge } from 'prom-client';
import type { Logger } from '../logger.js';
import { createLocalLimiter, type Limiter, type LimiterObserver } from '../limits/index.js';
import type { IpcClient } from './ipc-client.js';
import { createIpcLimiter } from './ipc-store.js';
import { createLeaseLimiter } from './lease-store.js';
import type { FailMode } from './fail-mode.js';
import { redactUrl } from '../redact-url.js';

/**
 * What the limiter reads of the configuration: config.ts's `Config` has these
 * fields, and coordination stays below the config that names its settings.
 */
export interface LimiterSettings {
  /** Shared buckets on Redis (a single server, or a Cluster's seed nodes); undefined = in memory, or the primary for a worker. */
  readonly redis: { readonly urls: readonly string[]; readonly cluster: boolean; readonly waitMs: number; readonly timeoutMs: number } | undefined;
  readonly failMode: FailMode;
}

/** The metrics the limiter's observer moves (metrics.ts registers them). */
export interface LimiterMetrics {
  countDecision(limit: string, allowed: boolean): void;
  readonly redisCalls: Counter<'op'>;
  readonly redisFailures: Counter<'op'>;
  readonly leaseTopUps: Counter<'result'>;
  readonly failMode: Gauge<'reason'>;
}

export interface CreatedLimiter {
  readonly limiter: Limiter;
  /** `ipc`: a worker of `serve --workers N` leasing from its primary (ipc-store.ts). */
  readonly store: 'local' | 'redis' | 'ipc';
  /** The Redis connection (budgets share it), when limits run on Redis. */
  readonly redis?: Redis | Cluster;
  /** Opens the Redis connection (if any); a Redis that is down starts the limiter in its fail mode. */
  connect(): Promise<void>;
  /** Returns leases, then closes the Redis connection (if any). */
  close(): Promise<void>;
}

function observerFor(logger: Logger, metrics: LimiterMetrics, ipc = false): LimiterObserver {
  if (ipc) {
    // The same lease protocol, with the primary in Redis' place: no Redis calls to count.
    return {
      leaseTopUp(_bucketId, granted) {
        metrics.leaseTopUps.inc({ result: granted > 0 ? 'granted' : 'empty' });
      },
      failMode(entered, reason) {
        metrics.failMode.set({ reason: 'primary_unavailable' }, entered ? 1 : 0);
        if (entered) logger.error({ reason }, 'the primary does not answer: rate limits run in the configured fail mode');
        else logger.warn({ reason }, 'the primary answers again: rate limits use leases again');
      },
      decision(limitName, allowed) {
        metrics.countDecision(limitName, allowed);
      },
    };
  }
  return {
    redisCall(op, _ms, ok) {
      metrics.redisCalls.inc({ op });
      if (!ok) metrics.redisFailures.inc({ op });
    },
    leaseTopUp(_bucketId, granted) {
      metrics.leaseTopUps.inc({ result: granted > 0 ? 'granted' : 'empty' });
    },
    failMode(entered, reason) {
      metrics.failMode.set({ reason: 'redis_unavailable' }, entered ? 1 : 0);
      // Loud on purpose: limits are degraded until Redis is back.
      if (entered) logger.error({ reason }, 'Redis unavailable: rate limits run in the configured fail mode');
      else logger.warn({ reason }, 'Redis reachable again: rate limits use leases again');
    },
    decision(limitName, allowed) {
      metrics.countDecision(limitName, allowed);
    },
  };
}

/** How long start-up waits for Redis: a little over the client's connect timeout (2 s). */
const CONNECT_WAIT_MS = 3000;

/**
 * Resolves once the client is ready. Something may have started connecting it already (ioredis
 * connects a lazy client on its first command), and then `connect()` would throw although the
 * connection succeeds: wait for the outcome instead. Rejects on the first connection error.
 */
async function whenReady(redis: Redis | Cluster, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  if (redis.status === 'wait') {
    await redis.connect();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error): void => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onReady = (): void => done();
    const onError = (error: Error): void => done(error);
    const timer = setTimeout(() => done(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
    redis.once('ready', onReady);
    redis.once('error', onError);
  });
}

/** How long a worker waits for its primary, ms: as for a Redis on the same host (TOLLGATE_REDIS_WAIT, TOLLGATE_REDIS_TIMEOUT defaults). */
const IPC_WAIT_MS = 500;
export const IPC_TIMEOUT_MS = 1000;

/**
 * Builds the limiter without touching the network; `connect()` opens Redis.
 * `ipc`: this process is a worker of `serve --workers N`; without Redis it
 * leases from the primary.
 */
export function createLimiter(
  config: LimiterSettings,
  deps: { logger: Logger; metrics: LimiterMetrics; clock?: () => number; ipc?: IpcClient },
): CreatedLimiter {
  if (config.redis === undefined && deps.ipc !== undefined) {
    const limiter = createIpcLimiter(deps.ipc, {
      failMode: config.failMode,
      observer: observerFor(deps.logger, deps.metrics, true),
      maxWaitMs: IPC_WAIT_MS,
      callTimeoutMs: IPC_TIMEOUT_MS,
      ...(deps.clock ? { now: deps.clock } : {}),
    });
    return { limiter, store: 'ipc', connect: async () => undefined, close: () => limiter.close() };
  }
  const observer = observerFor(deps.logger, deps.metrics);
  if (config.redis === undefined) {
    return {
      limiter: createLocalLimiter({ observer, ...(deps.clock ? { now: deps.clock } : {}) }),
      store: 'local',
      connect: async () => undefined,
      close: async () => undefined,
    };
  }
  // Fail fast instead of queueing: the limiter has its own timeouts, breaker and fail mode.
  const clientOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: true } as const;
  let redis: Redis | Cluster;
  if (config.redis.cluster) {
    redis = new Cluster(
      config.redis.urls.map((url) => {
        const parsed = new URL(url);
        return { host: parsed.hostname, port: Number(parsed.port || 6379) };
      }),
      { enableOfflineQueue: false, lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 2000 } },
    );
  } else {
    redis = new Redis(config.redis.urls[0]!, clientOptions);
  }
  redis.on('error', (error: Error) => deps.logger.warn({ message: error.message }, 'redis connection error'));
  const limiter = createLeaseLimiter({ redis, failMode: config.failMode, observer, maxWaitMs: config.redis.waitMs, callTimeoutMs: config.redis.timeoutMs });
  return {
    limiter,
    store: 'redis',
    redis,
    async connect() {
      const where = config.redis!.urls.map(redactUrl);
      try {
        await whenReady(redis, CONNECT_WAIT_MS);
        deps.logger.info({ redis: where }, `limits are shared through Redis at ${where.join(', ')}`);
      } catch (error) {
        // Start anyway: the limiter's fail mode covers a Redis that is down at boot, and ioredis keeps reconnecting.
        deps.logger.error({ redis: where, message: (error as Error).message }, 'Redis not reachable at start; limits start in the fail mode');
      }
    },
    async close() {
      await limiter.close();
      redis.disconnect();
    },
  };
}
