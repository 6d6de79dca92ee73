/**
 * A fresh PostgreSQL database per test file, on the machine's server
 * (127.0.0.1:5432, trust auth, user postgres; TOLLGATE_TEST_PG_URL overrides
 * the server). Fails loudly when no server answers — never skips: `.ci/run`
 * installs and starts one.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migratePg, openPg, type PgPool } from '../../src/storage/postgres/open.js';

const SERVER_URL = process.env.TOLLGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TempPostgres {
  /** URL of the new database (for TOLLGATE_DATABASE_URL). */
  readonly url: string;
  readonly name: string;
  /** A pool on it, migrated (closed by drop()). */
  readonly pool: PgPool;
  /** Closes the pool and drops the database (and any connection still on it). */
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: SERVER_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is required by this test but ${SERVER_URL} did not answer (${(error as Error).message}). ` +
        'Start it (.ci/run does: pg_ctlcluster --skip-systemctl-redirect <version> main start) or set TOLLGATE_TEST_PG_URL.',
      { cause: error },
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates a database with a random name and applies Tollgate's migrations to it. */
export async function createTempPostgres(options: { migrate?: boolean } = {}): Promise<TempPostgres> {
  const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(SERVER_URL, name);
  const pool = openPg(url);
  if (options.migrate !== false) await migratePg(pool);
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end();
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
