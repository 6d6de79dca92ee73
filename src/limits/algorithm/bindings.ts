/**
 * A policy's limits bound to the buckets that enforce them, and a request's
 * demands over those buckets. Pure; `bindingsForPolicy` keeps a cache.
 */
import type { BucketRef, Demand } from '../limiter.js';
import { computeActualCost, computeLimitCost, type RequestFacts, type UsageFacts } from './demands.js';
import type { Caller } from '../../domain/caller.js';
import { ratePerSecond, type LimitSpec } from '../../domain/policy.js';

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

/** Binds every limit of a policy at one level (new objects each call; see {@link bindingsForPolicy}). */
export function bindLimits(level: BucketLevel, ownerId: string, limits: readonly LimitSpec[]): LimitBinding[] {
  return limits.map((limit) => ({ limit, bucket: createBucketRef(level, ownerId, limit) }));
}

// Policies are immutable and replaced as a whole when they change, so a
// limits array stands for exactly one version of one policy: key the cache
// by it (weakly — a replaced policy takes its bindings with it), then by
// owner, since one array may be shared by several keys.
const cached: Record<BucketLevel, WeakMap<readonly LimitSpec[], Map<string, readonly LimitBinding[]>>> = {
  key: new WeakMap(),
  tenant: new WeakMap(),
  global: new WeakMap(),
};

/**
 * {@link bindLimits}, built once per policy and owner: the same `limits`
 * array gives the very same bindings (and bucket refs) on every request, so
 * the request path builds no strings. Frozen: copy before adding to it.
 */
export function bindingsForPolicy(level: BucketLevel, ownerId: string, limits: readonly LimitSpec[]): readonly LimitBinding[] {
  const owner = level === 'global' ? '' : ownerId;
  let byOwner = cached[level].get(limits);
  if (byOwner === undefined) {
    byOwner = new Map();
    cached[level].set(limits, byOwner);
  }
  let bindings = byOwner.get(owner);
  if (bindings === undefined) {
    bindings = Object.freeze(bindLimits(level, owner, limits));
    byOwner.set(owner, bindings);
  }
  return bindings;
}

/** The demands of one request over all its bindings (key, tenant, global). */
export function createDemands(bindings: readonly LimitBinding[], facts: RequestFacts): Demand[] {
  return bindings.map(({ limit, bucket }) => ({ bucket, cost: computeLimitCost(limit, facts) }));
}

/** Actual costs for `settle`, in the order of `demands` (as built by {@link createDemands}). */
export function computeSettlement(bindings: readonly LimitBinding[], demands: readonly Demand[], usage: UsageFacts): number[] {
  return bindings.map(({ limit }, i) => computeActualCost(limit, demands[i]?.cost ?? 0, usage));
}

/** The buckets a caller's request pays into: its key's, its tenant's, and the global ones. */
export function bindingsFor(caller: Caller, globalLimits: readonly LimitSpec[]): LimitBinding[] {
  const bindings = [...bindingsForPolicy('key', caller.key.id, caller.policy.limits)];
  if (caller.tenant !== undefined && caller.tenantPolicy !== undefined)
    bindings.push(...bindingsForPolicy('tenant', caller.tenant.id, caller.tenantPolicy.limits));
  if (globalLimits.length > 0) bindings.push(...bindingsForPolicy('global', '', globalLimits));
  return bindings;
}
