/** Alert claims as unique rows of PostgreSQL's `alert_claims`, shared by every node (src/storage/alert-claims.ts). */
import type { PgPool } from './open.js';
import type { AlertClaims } from '../alert-claims.js';

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
