/**
 * The CLI on a PostgreSQL no node has started on yet: an operator issues tenants, keys and
 * dashboard tokens before the first `serve`, so each command that opens PostgreSQL applies its
 * migrations first, as `serve` and `tollgate migrate` do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli, type CliResult } from '../../support/cli.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

let pg: TempPostgres;
const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-pg-'));

beforeAll(async () => {
  pg = await createTempPostgres({ migrate: false });
});
afterAll(async () => {
  await pg.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function onPostgres(...args: string[]): Promise<CliResult> {
  const saved = { ...process.env };
  Object.assign(process.env, { TOLLGATE_DATABASE_URL: pg.url, TOLLGATE_DB: join(dir, 'node.db'), TOLLGATE_CONFIG: '' });
  try {
    return await cli(...args);
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

it('creates a tenant, a key and a dashboard token on an empty database, migrating it first', async () => {
  const before = await pg.pool.query(`SELECT to_regclass('public.tenants')::text AS t`);
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

  const keys = await pg.pool.query<{ name: string }>('SELECT name FROM api_keys');
  expect(keys.rows.map((row) => row.name)).toEqual(['search']);
});
