/**
 * `tollgate tenants create` keeps every option it offers, on a SQLite file and
 * on PostgreSQL (TOLLGATE_DATABASE_URL): the two stores once drifted, one
 * keeping a tenant's extra budget and the other dropping it, and both dropped
 * `--max-in-flight` at creation while `tenants update` kept it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { cli, cliOnPostgres } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import type { Policy } from '../../../src/domain/policy.js';

describe.each(['sqlite', 'postgres'] as const)('tenants create (%s)', (store) => {
  let run: (...args: string[]) => ReturnType<typeof cli>;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    if (store === 'sqlite') {
      const db = tempDatabasePath().path;
      run = (...args) => cli('--db', db, ...args);
      cleanup = async () => rmSync(dirname(db), { recursive: true, force: true });
    } else {
      const pg: TempPostgres = await createTempPostgres();
      run = (...args) => cliOnPostgres(pg.url, ...args);
      cleanup = () => pg.drop();
    }
  });
  afterAll(async () => {
    await cleanup();
  });

  it('keeps a monthly budget given with --extra-budget beside the daily one', async () => {
    const created = await run('tenants', 'create', 'acme', '--budget-usd', '5', '--budget-period', 'day', '--extra-budget', '50/month', '--json');
    expect(created.code).toBe(0);
    const shown = (await run('tenants', 'show', 'acme', '--json')).json<{ policy: Policy }>();
    expect(shown.policy.budget).toEqual({ microUsd: 5_000_000, period: 'day' });
    expect(shown.policy.budgets).toEqual([{ microUsd: 50_000_000, period: 'month' }]);
    expect((await run('tenants', 'show', 'acme')).stdout).toMatch(/month/);
  });

  it('keeps --max-in-flight given at creation', async () => {
    expect((await run('tenants', 'create', 'bounded', '--max-in-flight', '4')).code).toBe(0);
    const shown = (await run('tenants', 'show', 'bounded', '--json')).json<{ policy: Policy }>();
    expect(shown.policy.maxInFlight).toBe(4);
  });
});
