/**
 * "This alert is sent once": whoever claims an alert's id first sends it.
 * One claim store per deployment, chosen by what the nodes share —
 * PostgreSQL on a replica (a unique row: src/storage/postgres/alert-claims.ts),
 * else what the caller shares between hosts (Redis: src/alerts/claims.ts),
 * else the SQLite file (a unique row, for processes on one host:
 * src/storage/sqlite/alert-claims.ts).
 */
import type Database from 'better-sqlite3';
import type { Backend } from './backend.js';
import { sqliteClaims } from './sqlite/alert-claims.js';
import { pgClaims } from './postgres/alert-claims.js';

export interface AlertClaims {
  /** Which store decides ("sqlite", "redis", "postgres"), for logs. */
  readonly kind: string;
  /** True for the one caller that claims `id` first; the claim holds until `expiresAt` (ms). */
  claim(id: string, now: number, expiresAt: number): Promise<boolean>;
  /** Forgets claims whose period is long over. */
  prune(now: number): Promise<void>;
}

export function openAlertClaims(
  backend: Backend,
  options: {
    /** The SQLite connection to claim on (the alerts' own, with its short busy timeout); default: the backend's. */
    readonly connection?: Database.Database | undefined;
    /** Claims the hosts share without a replica (Redis), before the file of one host. */
    readonly shared?: AlertClaims | undefined;
  } = {},
): AlertClaims {
  if (backend.kind === 'postgres') return pgClaims(backend.pool);
  return options.shared ?? sqliteClaims(options.connection ?? backend.database.sqlite);
}
