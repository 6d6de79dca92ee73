/**
 * The CLI on a PostgreSQL no node has started on yet: an operator issues tenants, keys and
 * dashboard tokens before the first `serve`, so each command that opens PostgreSQL applies its
 * migrations first, as `serve` and `tollgate migrate` do — and only when some are pending, so a
 * role that may only read can still read its spend.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli, type CliResult } from '../../support/cli.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

let db: TempPostgres;
const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-pg-'));

beforeAll(async () => {
  db = await createTempPostgres({ migrate: false });
});
afterAll(async () => {
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function onPostgres(...args: string[]): Promise<CliResult> {
  return onPostgresAs(db.url, ...args);
}

async function onPostgresAs(url: string, ...args: string[]): Promise<CliResult> {
  const saved = { ...process.env };
  Object.assign(process.env, { TOLLGATE_DATABASE_URL: url, TOLLGATE_DB: join(dir, 'node.db'), TOLLGATE_CONFIG: '' });
  try {
    return await cli(...args);
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

it('creates a tenant, a key and a dashboard token on an empty database, migrating it first', async () => {
  const before = await db.pool.query(`SELECT to_regclass('public.tenants')::text AS t`);
  expect(before.rows[0]).toEqual({ t: null });

  const tenant = await onPostgres('tenants', 'create', 'acme', '--json');
  expect(tenant.stderr).toBe('');
  expect(tenant.code).toBe(0);
  expect(tenant.json<{ name: string }>().name).toBe('acme');

  const key = await onPostgres('keys', 'create', '--name', 'search', '--tenant', 'acme', '--json');
  expect(key.code).toBe(0);
  const token = await onPostgres('dashboard-token', 'create', '--tenant', 'acme', '--json');
  expect(token.code).toBe(0);
  const spend = await onPostgres('spend', '--json');
  expect(spend.code).toBe(0);
  expect(spend.json<{ total: { requests: number } }>().total.requests).toBe(0);

  const keys = await db.pool.query<{ name: string }>('SELECT name FROM api_keys');
  expect(keys.rows.map((row) => row.name)).toEqual(['search']);
});

it('reads spend as a role that may only read, once the schema is current', async () => {
  const role = `tollgate_reader_${randomBytes(4).toString('hex')}`;
  const server = new URL(db.url);
  server.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: server.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    await db.pool.query(`GRANT USAGE ON SCHEMA public, drizzle TO ${role}`);
    await db.pool.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public, drizzle TO ${role}`);
    const reader = new URL(db.url);
    reader.username = role;
    const spend = await onPostgresAs(reader.toString(), 'spend', '--by', 'key', '--json');
    expect(spend.stderr).toBe('');
    expect(spend.code).toBe(0);
  } finally {
    await db.pool.query(`REVOKE ALL ON ALL TABLES IN SCHEMA public, drizzle FROM ${role}`);
    await db.pool.query(`REVOKE ALL ON SCHEMA public, drizzle FROM ${role}`);
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  }
});
