/**
 * The tuning of the lease store (lease-store.ts): where its lease calls run
 * (Redis, or the primary of `serve --workers N`), how long it waits, and how
 * its leases live. Apart from the store so the store reads as its behaviour.
 */
import type { LimiterObserver } from '../limits/limiter.js';
import type { FailMode } from './fail-mode.js';
import type { LeaseTransport, RedisClient } from './lease-script.js';

/** Options of the lease store (lease-store.ts); every field but `redis` or `transport` has a default. */
export interface LeaseLimiterOptions {
  /** A connected ioredis `Redis` or `Cluster`. The limiter never closes it. */
  readonly redis?: RedisClient;
  /**
   * Instead of `redis`: where the lease script runs (the primary of
   * `serve --workers N`, ipc-store.ts). The protocol and its guarantee are the same.
   */
  readonly transport?: LeaseTransport;
  /** Identifies this process in lease fields; default a random UUID. Must be unique per process. */
  readonly nodeId?: string;
  /** Default `local`. */
  readonly failMode?: FailMode;
  /** Lease lifetime, ms. Default 5000. */
  readonly leaseTtlMs?: number;
  /** Stop spending a lease this long before it expires, ms. Default max(50, 10% of the lease TTL). */
  readonly expiryMarginMs?: number;
  /** Largest lease as a fraction of the burst. Default 1 (narrowed automatically when nodes share a bucket). */
  readonly maxLeaseShare?: number;
  /** How long a request may wait for Redis (or the primary) before the fail mode decides, ms. Default 50. */
  readonly maxWaitMs?: number;
  /** Timeout of one pipeline of lease calls, ms. Default 250. */
  readonly callTimeoutMs?: number;
  /** Consecutive failed batches that open the breaker. Default 3. */
  readonly breakerThreshold?: number;
  /** How long the open breaker skips Redis before one probe, ms. Default 1000. */
  readonly breakerCooldownMs?: number;
  /** Period of the housekeeping pass (renew, return idle/excess, report debt), ms. Default 100. */
  readonly tickMs?: number;
  /** Prefix of Redis keys. Default `tg`. */
  readonly keyPrefix?: string;
  /** Monotonic clock, ms. Default `performance.now`. */
  readonly now?: () => number;
  /** Hooks for logs and metrics. */
  readonly observer?: LimiterObserver;
}
