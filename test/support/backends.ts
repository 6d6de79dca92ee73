/**
 * The storage contract suites (test/integration/storage/) run every case over
 * both backends: a SQLite file, and PostgreSQL (a fresh database per file)
 * beside the node's own SQLite file. A backend that cannot keep a promise the
 * other keeps fails here, not in a user's replica.
 */
import type { PgPool } from '../../src/storage/postgres/open.js';
import { afterAll, beforeAll, describe } from 'vitest';
import type { Backend } from '../../src/storage/backend.js';
import { openTempDatabase, type TempDatabase } from './db.js';
import { createTempPostgres, type TempPostgres } from './postgres.js';

export interface BackendFixture {
  readonly name: 'sqlite' | 'postgres';
  /** A fresh backend: a new SQLite file, and on PostgreSQL the file's database emptied of the previous test's rows. */
  fresh(): Promise<Backend>;
}

/** Runs `body` once per backend, in a describe block named after it. */
export function describeBackends(title: string, body: (fixture: BackendFixture) => void): void {
  describe.each(['sqlite', 'postgres'] as const)(`${title} (%s)`, (name) => {
    let postgres: TempPostgres | undefined;
    const files: TempDatabase[] = [];
    beforeAll(async () => {
      if (name === 'postgres') postgres = await createTempPostgres();
    });
    afterAll(async () => {
      for (const file of files.splice(0)) file.remove();
      await postgres?.drop();
    });
    body({
      name,
      async fresh() {
        const file = openTempDatabase();
        files.push(file);
        if (name === 'sqlite') return { kind: 'sqlite', database: file.database };
        const pool = postgres!.pool;
        // Every table but the migrations' own: each test starts from an empty database.
        const { rows } = await pool.query<{ tablename: string }>(
          "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename NOT LIKE '%migrations%'",
        );
        if (rows.length > 0)
          await truncateAll(
            pool,
            rows.map((r) => r.tablename),
          );
        return { kind: 'postgres', database: file.database, pool };
      },
    });
  });
}

/**
 * Empties the tables. A previous test's spend reads may still be answering (the PostgreSQL spend
 * source refreshes in the background, src/storage/postgres/spend-source.ts): one that holds one
 * rollup table and wants another can deadlock with the TRUNCATE, which PostgreSQL then aborts
 * (40P01). The read finishes either way, so the TRUNCATE is tried again.
 */
async function truncateAll(pool: PgPool, tables: readonly string[]): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await pool.query(`TRUNCATE ${tables.map((table) => `"${table}"`).join(', ')} RESTART IDENTITY CASCADE`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt === 3) throw error;
    }
  }
}
