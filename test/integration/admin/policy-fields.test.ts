/**
 * Every field of the policy survives every way in: a key and a tenant
 * created with every field set, through the CLI on a SQLite file, the CLI on
 * PostgreSQL, and the admin API over HTTP (on either store, directly and
 * through the CLI's --url), read back equal.
 * The field list comes from the zod schemas, so a field added to the policy
 * fails here until each way in carries it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { cli, cliOnPostgres, type CliResult } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { limitSchema, policySchema, type LimitSpec, type Policy } from '../../../src/domain/policy.js';

type Field = keyof Policy;

/**
 * One value per policy field, the CLI options that set it, and whether a
 * tenant takes it (the end-user, tag, downgrade and model fields are the
 * key's alone: `tenants create` does not offer them).
 */
const FIELDS: { readonly [F in Field]-?: { readonly value: NonNullable<Policy[F]>; readonly cli: readonly string[]; readonly tenant: boolean } } = {
  limits: {
    value: [{ name: 'rpm', unit: 'requests', amount: 60, period: 'min', burst: 90, startEmpty: true }],
    cli: ['--limit', 'requests:60/min,burst=90,name=rpm,start=empty'],
    tenant: true,
  },
  budget: { value: { microUsd: 5_000_000, period: 'day' }, cli: ['--budget-usd', '5', '--budget-period', 'day'], tenant: true },
  budgets: { value: [{ microUsd: 50_000_000, period: 'month' }], cli: ['--extra-budget', '50/month'], tenant: true },
  maxInFlight: { value: 4, cli: ['--max-in-flight', '4'], tenant: true },
  models: { value: ['gpt-4o-mini', 'gpt-4.1*'], cli: ['--models', 'gpt-4o-mini,gpt-4.1*'], tenant: false },
  endUser: {
    value: {
      limits: [{ name: 'requests-per-min', unit: 'requests', amount: 10, period: 'min', burst: 10 }],
      budgets: [{ microUsd: 1_000_000, period: 'week' }],
    },
    cli: ['--user-rpm', '10', '--user-budget-usd', '1', '--user-budget-period', 'week'],
    tenant: false,
  },
  session: {
    value: {
      limits: [{ name: 'requests-per-min', unit: 'requests', amount: 30, period: 'min', burst: 30 }],
      budgets: [{ microUsd: 5_000_000, period: 'day' }],
    },
    cli: ['--session-limit', 'requests:30/min', '--session-budget-usd', '5', '--session-budget-period', 'day'],
    tenant: true,
  },
  tagBudgets: { value: [{ tag: 'search', microUsd: 2_000_000, period: 'day' }], cli: ['--tag-budget', 'search=2/day'], tenant: false },
  downgrade: {
    value: { atPercent: 75, models: { 'gpt-4o': 'gpt-4o-mini' } },
    cli: ['--downgrade', 'gpt-4o=gpt-4o-mini', '--downgrade-at', '75'],
    tenant: false,
  },
  runaway: { value: { factor: 20, microUsdPerHour: 50_000_000 }, cli: ['--runaway-factor', '20', '--runaway-usd-per-hour', '50'], tenant: false },
};

/** Limit fields the CLI's `--limit` cannot express (they come from the admin API or the config file). */
const API_ONLY_LIMIT_FIELDS = ['modelWeights', 'costSource'] as const;

/** Limits with every limit field set, for the admin API. */
const EVERY_LIMIT: LimitSpec[] = [
  { name: 'rpm', unit: 'requests', amount: 60, period: 'min', burst: 90, startEmpty: true, costSource: { kind: 'header', name: 'x-units', default: 2 } },
  { name: 'weighted', unit: 'tokens', amount: 40_000, period: 'min', burst: 60_000, modelWeights: { 'gpt-4o': 4 } },
];

const fields = Object.keys(FIELDS) as Field[];
const keyPolicy = (limits: readonly LimitSpec[]): Policy =>
  Object.fromEntries(fields.map((f) => [f, f === 'limits' ? limits : FIELDS[f].value])) as unknown as Policy;
const tenantFields = fields.filter((f) => FIELDS[f].tenant);
const tenantPolicy = (limits: readonly LimitSpec[]): Partial<Policy> =>
  Object.fromEntries(tenantFields.map((f) => [f, f === 'limits' ? limits : FIELDS[f].value])) as Partial<Policy>;

describe('the policy fields this test walks', () => {
  it('are every field of the policy schema', () => {
    expect([...fields].sort()).toEqual(Object.keys(policySchema.unwrap().shape).sort());
  });

  it('set every limit field, from the CLI or (where it cannot) the admin API', () => {
    const setByCli = Object.keys(FIELDS.limits.value[0]!);
    const setByApi = EVERY_LIMIT.flatMap((limit) => Object.keys(limit));
    expect(new Set([...setByCli, ...API_ONLY_LIMIT_FIELDS])).toEqual(new Set(Object.keys(limitSchema.unwrap().shape)));
    expect(new Set(setByApi)).toEqual(new Set(Object.keys(limitSchema.unwrap().shape)));
  });
});

describe.each(['sqlite', 'postgres'] as const)('every policy field through the CLI (%s)', (store) => {
  let run: (...args: string[]) => Promise<CliResult>;
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

  it('creates a key with every field and shows each one back', async () => {
    const created = await run('keys', 'create', '--name', 'every-field', ...fields.flatMap((f) => FIELDS[f].cli), '--json');
    expect(created.stderr).toBe('');
    expect(created.json<{ policy: Policy }>().policy).toEqual(keyPolicy(FIELDS.limits.value));
    expect((await run('keys', 'show', 'every-field', '--json')).json<{ policy: Policy }>().policy).toEqual(keyPolicy(FIELDS.limits.value));
  });

  it('creates a tenant with every tenant field and shows each one back', async () => {
    const created = await run('tenants', 'create', 'every-field', ...tenantFields.flatMap((f) => FIELDS[f].cli), '--json');
    expect(created.stderr).toBe('');
    expect(created.json<{ policy: Policy }>().policy).toEqual(tenantPolicy(FIELDS.limits.value));
    expect((await run('tenants', 'show', 'every-field', '--json')).json<{ policy: Policy }>().policy).toEqual(tenantPolicy(FIELDS.limits.value));
  });
});

describe.each(['sqlite', 'postgres'] as const)('every policy field through the admin API (%s)', (store) => {
  const ADMIN = 'admin-token-for-tests-0123456789';
  let proxy: TestProxy;
  let pg: TempPostgres | undefined;
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${proxy.server.url}/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as { policy: Policy } };
  };
  beforeAll(async () => {
    if (store === 'postgres') pg = await createTempPostgres();
    proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN, ...(pg === undefined ? {} : { TOLLGATE_DATABASE_URL: pg.url }) });
  });
  afterAll(async () => {
    await proxy?.close();
    await pg?.drop();
  });

  it('creates a key with every field (and every limit field) and reads each one back', async () => {
    const created = await admin('POST', '/keys', { name: 'every-field', policy: keyPolicy(EVERY_LIMIT) });
    expect(created.status).toBe(201);
    expect(created.body.policy).toEqual(keyPolicy(EVERY_LIMIT));
    expect((await admin('GET', '/keys/every-field')).body.policy).toEqual(keyPolicy(EVERY_LIMIT));
  });

  it('creates a key and a tenant with every field through the CLI with --url, and shows each one back', async () => {
    const remote = (...args: string[]) => cli('--url', proxy.server.url, '--admin-token', ADMIN, ...args);
    const key = await remote('keys', 'create', '--name', 'every-field-remote', ...fields.flatMap((f) => FIELDS[f].cli), '--json');
    expect(key.stderr).toBe('');
    expect((await remote('keys', 'show', 'every-field-remote', '--json')).json<{ policy: Policy }>().policy).toEqual(keyPolicy(FIELDS.limits.value));
    const tenant = await remote('tenants', 'create', 'every-field-remote', ...tenantFields.flatMap((f) => FIELDS[f].cli), '--json');
    expect(tenant.stderr).toBe('');
    expect((await remote('tenants', 'show', 'every-field-remote', '--json')).json<{ policy: Policy }>().policy).toEqual(tenantPolicy(FIELDS.limits.value));
  });

  it('creates a tenant with every tenant field and reads each one back', async () => {
    const created = await admin('POST', '/tenants', { name: 'every-field', ...tenantPolicy(EVERY_LIMIT) });
    expect(created.status).toBe(201);
    expect(created.body.policy).toEqual(tenantPolicy(EVERY_LIMIT));
    expect((await admin('GET', '/tenants/every-field')).body.policy).toEqual(tenantPolicy(EVERY_LIMIT));
  });
});
