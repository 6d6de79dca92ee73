/**
 * PostgreSQL for replicas (`TOLLGATE_DATABASE_URL`): a connection pool whose
 * integers read as JS numbers, and the migrations of `drizzle/pg/` applied
 * under an advisory lock, so nodes starting together apply each one once.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** The PostgreSQL migrations (resolves the same from src/ and dist/). */
const PG_MIGRATIONS_FOLDER = fileURLToPath(new URL('../../../drizzle/pg', import.meta.url));

/** Any 64-bit key works; this one is "tollgate" in ASCII, unlikely to collide with an application's own locks. */
const MIGRATION_LOCK = '7813575385137751909';

const INT8 = 20;
const NUMERIC = 1700;

/**
 * bigint and numeric (what sum() over bigint returns) as numbers: amounts are
 * micro-USD and milliseconds, far below 2^53.
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (text: string) => Number(text);
    return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

export type PgPool = pg.Pool;

export interface PgOptions {
  /** Most connections this process opens (default 4: the shipper, the key sync and the admin API share them). */
  readonly max?: number;
  /** How long a connection attempt may take (default 3 s): an unreachable server must not hang the callers. */
  readonly connectTimeoutMs?: number;
  readonly onError?: (error: unknown) => void;
}

/** A pool on `url`; no connection is opened until the first query. */
export function openPg(url: string, options: PgOptions = {}): PgPool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 3000,
    // A statement stuck on a dead server gives up rather than holding the shipper forever.
    query_timeout: 30_000,
    idleTimeoutMillis: 30_000,
    types,
  });
  // A connection dropped by the server (idle, or checked out between two
  // queries) must not crash the process: the next query on it fails instead.
  pool.on('error', (error) => options.onError?.(error));
  pool.on('connect', (client) => client.on('error', (error) => options.onError?.(error)));
  return pool;
}

/** SQLSTATEs that mean the server is not answering queries: class 08 (connection), shutting down, starting, full. */
const UNREACHABLE_STATES = /^(08...|57P0[123]|53300)$/;
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether `error` says PostgreSQL did not answer (refused, dropped, timed
 * out, shutting down) rather than refusing a query: the first is a 503 to
 * retry, the second a bug or a conflict to report as it is.
 */
export function isPgUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNREACHABLE_STATES.test(code) || UNREACHABLE_CODES.has(code))) return true;
  // node-postgres's own connection failures carry no code, only these messages.
  return /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout)/.test(error.message);
}

/** The options a single client (LISTEN) needs to read numbers the same way. */
export function pgClientConfig(url: string): pg.ClientConfig {
  return { connectionString: url, connectionTimeoutMillis: 3000, types };
}

/**
 * Applies pending migrations, holding a session advisory lock on one
 * connection: a second node waits, then finds nothing left to apply.
 * Returns how many migrations were new.
 */
export async function migratePg(pool: PgPool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK]);
    try {
      const before = await appliedCount(client);
      await migrate(drizzle(client), { migrationsFolder: PG_MIGRATIONS_FOLDER });
      return (await appliedCount(client)) - before;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
}

/**
 * Whether `migratePg` has anything to apply, read without writing: drizzle applies every migration
 * newer than the newest one recorded. Lets the CLI migrate only when needed, so a role that may only
 * read (a finance user's `tollgate spend`) is not refused by the migrator's CREATE SCHEMA.
 */
export async function pgMigrationsPending(pool: PgPool): Promise<boolean> {
  const newest = readMigrationFiles({ migrationsFolder: PG_MIGRATIONS_FOLDER }).reduce((max, migration) => Math.max(max, migration.folderMillis), 0);
  const exists = await pool.query<{ t: string | null }>(`SELECT to_regclass('drizzle.__drizzle_migrations')::text AS t`);
  if (exists.rows[0]?.t === null || exists.rows[0]?.t === undefined) return newest > 0;
  const applied = await pool.query<{ at: number | null }>('SELECT max(created_at) AS at FROM drizzle.__drizzle_migrations');
  return Number(applied.rows[0]?.at ?? 0) < newest;
}

async function appliedCount(client: pg.PoolClient): Promise<number> {
  const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('drizzle.__drizzle_migrations')::text AS t`);
  if (exists.rows[0]?.t === null || exists.rows[0]?.t === undefined) return 0;
  const result = await client.query<{ n: number }>('SELECT count(*)::bigint AS n FROM drizzle.__drizzle_migrations');
  return result.rows[0]?.n ?? 0;
}
