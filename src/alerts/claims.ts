/**
 * "This alert is sent once": whoever claims an alert's id first sends it.
 * One claim store per deployment, chosen by what the nodes share —
 * PostgreSQL (TOLLGATE_DATABASE_URL: a unique row), else Redis (SET NX with
 * an expiry), else the SQLite file (a unique row, for processes on one host).
 */
import type Database from 'better-sqlite3';
import type { Cluster, Redis } from 'ioredis';
import type { PgPool } from '../storage/postgres/open.js';

export interface AlertClaims {
  /** Which store decides ("sqlite", "redis", "postgres"), for logs. */
  readonly kind: string;
  /** True for the one caller that claims `id` first; the claim holds until `expiresAt` (ms). */
  claim(id: string, now: number, expiresAt: number): Promise<boolean>;
  /** Forgets claims whose period is long over. */
  prune(now: number): Promise<void>;
}

/** Claims as unique rows of the SQLite file's `alert_claims`. */
export function sqliteClaims(sqlite: Database.Database): AlertClaims {
  const insert = sqlite.prepare('INSERT INTO alert_claims (id, claimed_at, expires_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const prune = sqlite.prepare('DELETE FROM alert_claims WHERE expires_at < ?');
  return {
    kind: 'sqlite',
    claim: (id, now, expiresAt) => Promise.resolve(insert.run(id, now, expiresAt).changes === 1),
    prune: async (now) => {
      prune.run(now);
    },
  };
}

/** Claims as Redis keys set with NX and an expiry (Redis forgets them by itself). */
export function redisClaims(redis: Redis | Cluster, prefix = 'tg:alert:'): AlertClaims {
  return {
    kind: 'redis',
    claim: async (id, now, expiresAt) => (await redis.set(`${prefix}${id}`, String(now), 'PX', Math.max(1000, expiresAt - now), 'NX')) === 'OK',
    prune: () => Promise.resolve(),
  };
}

/** Claims as unique rows of PostgreSQL's `alert_claims`, shared by every node. */
export function pgClaims(pool: PgPool): AlertClaims {
  return {
    kind: 'postgres',
    claim: async (id, now, expiresAt) => {
      const result = await pool.query('INSERT INTO alert_claims (id, claimed_at, expires_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [
        id,
        now,
        expiresAt,
      ]);
      return result.rowCount === 1;
    },
    prune: async (now) => {
      await pool.query('DELETE FROM alert_claims WHERE expires_at < $1', [now]);
    },
  };
}
