/**
 * Rate limits for the proxy's request path.
 *
 * ```ts
 * // Once per key (cache with the key record):
 * const bindings = [
 *   ...bindLimits('key', key.id, key.policy.limits),
 *   ...bindLimits('tenant', key.tenantId, tenantPolicy.limits),
 *   ...bindLimits('global', '', globalPolicy.limits),
 * ];
 * // Per request:
 * const demands = createDemands(bindings, facts);
 * const result = await limiter.acquire(demands);        // all-or-none
 * headers = buildRateLimitHeaders(result, key.id);
 * if (!result.ok) → 429 (rate_limited), 400 (never_fits), 503/429 (unavailable)
 * // After the response (once):
 * limiter.settle(result.ticket, computeSettlement(bindings, demands, usage));
 * ```
 */
import { computeActualCost, computeLimitCost, type RequestFacts, type UsageFacts } from './algorithm/demands.js';
import type { BucketRef, Demand } from './limiter.js';
import { ratePerSecond, type LimitSpec } from './algorithm/policy.js';

export type {
  AcquireResult,
  BucketRef,
  BucketSnapshot,
  Demand,
  Limiter,
  LimiterObserver,
  RefusalReason,
  Ticket,
} from './limiter.js';
export * from './algorithm/demands.js';
export * from './algorithm/headers.js';
export { createLocalLimiter, LocalLimiter, type LocalLimiterOptions } from './stores/local-store.js';
export { createRedisLimiter, RedisLimiter, type FailMode, type RedisLimiterOptions } from './stores/redis-store.js';
export type { RedisClient } from './stores/lease-script.js';

/** Where a bucket sits: a key's own limits, its tenant's, or the global ones. */
export type BucketLevel = 'key' | 'tenant' | 'global';

/** A limit of a policy bound to the bucket that enforces it. */
export interface LimitBinding {
  readonly limit: LimitSpec;
  readonly bucket: BucketRef;
}

/**
 * The bucket of `limit` at `level` for `ownerId` (key id, tenant id; ignored
 * for `global`). Hash tags: `key:<id>`, `tenant:<id>`, `global` — one Redis
 * Cluster slot per owner. Ids: `<hashTag>:<limitName>`.
 */
export function createBucketRef(level: BucketLevel, ownerId: string, limit: LimitSpec): BucketRef {
  const hashTag = level === 'global' ? 'global' : `${level}:${ownerId}`;
  return {
    id: `${hashTag}:${limit.name}`,
    hashTag,
    limitName: limit.name,
    ratePerSec: ratePerSecond(limit),
    burst: limit.burst,
    unit: limit.unit,
    ...(limit.startEmpty ? { startEmpty: true } : {}),
  };
}

/** Binds every limit of a policy at one level. */
export function bindLimits(level: BucketLevel, ownerId: string, limits: readonly LimitSpec[]): LimitBinding[] {
  return limits.map((limit) => ({ limit, bucket: createBucketRef(level, ownerId, limit) }));
}

/** The demands of one request over all its bindings (key, tenant, global). */
export function createDemands(bindings: readonly LimitBinding[], facts: RequestFacts): Demand[] {
  return bindings.map(({ limit, bucket }) => ({ bucket, cost: computeLimitCost(limit, facts) }));
}

/** Actual costs for `settle`, in the order of `demands` (as built by {@link createDemands}). */
export function computeSettlement(
  bindings: readonly LimitBinding[],
  demands: readonly Demand[],
  usage: UsageFacts,
): number[] {
  return bindings.map(({ limit }, i) => computeActualCost(limit, demands[i]?.cost ?? 0, usage));
}
