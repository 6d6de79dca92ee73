/**
 * Builds the limiter the configuration asks for — in-memory, or escrow leases
 * on Redis (a single server or a Cluster) — with its observer wired to the
 * logs and metrics. The one place that opens Redis connections for limits.
 */
import { Cluster, Redis } from 'ioredis';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import { createLocalLimiter, createRedisLimiter, type Limiter, type LimiterObserver } from '../index.js';
import type { IpcClient } from './ipc-client.js';
import { createIpcLimiter } from './ipc-store.js';

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

function observerFor(logger: Logger, metrics: Metrics, ipc = false): LimiterObserver {
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
        metrics.decisions.inc({ limit: limitName, result: allowed ? 'allowed' : 'limited' });
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
      metrics.decisions.inc({ limit: limitName, result: allowed ? 'allowed' : 'limited' });
    },
  };
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
  config: Pick<Config, 'redis' | 'failMode'>,
  deps: { logger: Logger; metrics: Metrics; clock?: () => number; ipc?: IpcClient },
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
  const limiter = createRedisLimiter({ redis, failMode: config.failMode, observer, maxWaitMs: config.redis.waitMs, callTimeoutMs: config.redis.timeoutMs });
  return {
    limiter,
    store: 'redis',
    redis,
    async connect() {
      try {
        await redis.connect();
      } catch (error) {
        // Start anyway: the limiter's fail mode covers a Redis that is down at boot, and ioredis keeps reconnecting.
        deps.logger.error({ message: (error as Error).message }, 'Redis not reachable at start; limits start in the fail mode');
      }
    },
    async close() {
      await limiter.close();
      redis.disconnect();
    },
  };
}
