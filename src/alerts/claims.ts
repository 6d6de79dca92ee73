/**
 * Alert claims in Redis, for hosts that share a Redis but no PostgreSQL (the
 * claim stores and the choice between them: src/storage/alert-claims.ts).
 */
import type { Cluster, Redis } from 'ioredis';
import type { AlertClaims } from '../storage/alert-claims.js';

export type { AlertClaims } from '../storage/alert-claims.js';

/** Claims as Redis keys set with NX and an expiry (Redis forgets them by itself). */
export function redisClaims(redis: Redis | Cluster, prefix = 'tg:alert:'): AlertClaims {
  return {
    kind: 'redis',
    claim: async (id, now, expiresAt) => (await redis.set(`${prefix}${id}`, String(now), 'PX', Math.max(1000, expiresAt - now), 'NX')) === 'OK',
    prune: () => Promise.resolve(),
  };
}
