/**
 * "This alert is sent once": whoever claims an alert's id first sends it.
 * One claim store per deployment, chosen by what the nodes share —
 * PostgreSQL on a replica (a unique row: src/storage/postgres/alert-claims.ts),
 * else what the caller shares between hosts (Redis: src/alerts/claims.ts),
 * else the SQLite file (a unique row, for processes on one host:
 * src/storage/sqlite/alert-claims.ts).
 */

export interface AlertClaims {
  /** Which store decides ("sqlite", "redis", "postgres"), for logs. */
  readonly kind: string;
  /** True for the one caller that claims `id` first; the claim holds until `expiresAt` (ms). */
  claim(id: string, now: number, expiresAt: number): Promise<boolean>;
  /** Forgets claims whose period is long over. */
  prune(now: number): Promise<void>;
}
