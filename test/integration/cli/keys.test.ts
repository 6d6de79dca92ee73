/** Every key and tenant command of the CLI, on a real temp SQLite file built by the real migrations. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { cli } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS_FOLDER, openDatabase } from '../../../src/storage/sqlite/open.js';
import { hashKey } from '../../../src/storage/key-format.js';

let db: string;
beforeEach(() => {
  db = tempDatabasePath().path;
});
afterEach(() => {
  rmSync(dirname(db), { recursive: true, force: true });
});

interface KeyJson {
  key?: string;
  id: string;
  name: string;
  prefix: string;
  tenant: string | null;
  status: string;
  expiresAt: number | null;
  policy: {
    limits: Array<{ name: string; unit: string; amount: number; period: string; burst: number }>;
    budget?: { microUsd: number; period: string };
    models?: string[];
  };
  metadata: Record<string, string>;
}

const run = (...args: string[]) => cli('--db', db, ...args);

describe('keys create', () => {
  it('issues a key shown once, stores only its hash and prefix, and parses every policy option', async () => {
    const created = await run(
      'keys',
      'create',
      '--name',
      'alice',
      '--tenant',
      'acme',
      '--limit',
      'tokens:40000/min,burst=60000',
      '--rpm',
      '60',
      '--limit',
      'usd:5/day',
      '--budget-usd',
      '100',
      '--budget-period',
      'month',
      '--models',
      'gpt-4o-mini,gpt-4.1*',
      '--expires',
      '30d',
      '--meta',
      'team=search',
      '--json',
    );
    expect(created.code).toBe(0);
    const key = created.json<KeyJson>();
    expect(key.key).toMatch(/^tg-[0-9A-Za-z]{43}$/);
    expect(key.prefix).toBe(key.key!.slice(0, 9));
    expect(key.tenant).toBe('acme');
    expect(key.policy.limits).toEqual([
      { name: 'tokens-per-min', unit: 'tokens', amount: 40000, period: 'min', burst: 60000 },
      { name: 'usd-per-day', unit: 'usd', amount: 5_000_000, period: 'day', burst: 5_000_000 },
      { name: 'requests-per-min', unit: 'requests', amount: 60, period: 'min', burst: 60 },
    ]);
    expect(key.policy.budget).toEqual({ microUsd: 100_000_000, period: 'month' });
    expect(key.policy.models).toEqual(['gpt-4o-mini', 'gpt-4.1*']);
    expect(key.expiresAt! - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(key.metadata).toEqual({ team: 'search' });

    // The database holds the hash, never the key.
    const database = openDatabase(db);
    const row = database.sqlite.prepare('SELECT * FROM api_keys WHERE id = ?').get(key.id) as Record<string, unknown>;
    database.close();
    expect(row.key_hash).toBe(hashKey(key.key!));
    expect(JSON.stringify(row)).not.toContain(key.key!);

    // Reads never show it again.
    const shown = await run('keys', 'show', 'alice', '--json');
    expect(shown.stdout).not.toContain(key.key!);
    const listed = await run('keys', 'list');
    expect(listed.stdout).not.toContain(key.key!);
  });

  it('prints the key with a warning in human form', async () => {
    const created = await run('keys', 'create', '--name', 'bob');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/key\s+tg-[0-9A-Za-z]{43}/);
    expect(created.stdout).toContain('shown only this once');
  });

  it.each([
    [['--limit', 'bananas:5/min'], /unknown limit unit "bananas"/],
    [['--limit', 'requests:0/min'], /greater than zero/],
    [['--limit', 'requests:-5/min'], /greater than zero|not of the form/],
    [['--limit', 'requests:10/fortnight'], /unknown period "fortnight"/],
    [['--limit', 'requests:10/min,burst=0.5'], /below the cost of one request/],
    [['--limit', 'tokens:100'], /not of the form UNIT:AMOUNT\/PERIOD/],
    [['--rpm', '10', '--limit', 'requests:5/min'], /two limits are named "requests-per-min"/],
    [['--budget-usd', 'lots'], /not a dollar amount/],
    [['--budget-usd', '0.0000001'], /more precision than one micro-dollar/],
    [['--expires', 'yesterday'], /not a duration/],
    [['--expires', '2001-01-01'], /in the past/],
  ])('refuses %j with a clear message and exit code 2', async (options, message) => {
    const result = await run('keys', 'create', '--name', 'bad', ...options);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect((await run('keys', 'list', '--json')).json<unknown[]>()).toHaveLength(0);
  });

  it('refuses a second live key with the same name', async () => {
    expect((await run('keys', 'create', '--name', 'dup')).code).toBe(0);
    const again = await run('keys', 'create', '--name', 'dup');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a key named "dup" already exists');
  });
});

describe('naming a key', () => {
  it('accepts its id, its name or its visible prefix everywhere', async () => {
    const key = (await run('keys', 'create', '--name', 'carol', '--json')).json<KeyJson>();
    for (const ref of [key.id, 'carol', key.prefix]) {
      expect((await run('keys', 'show', ref, '--json')).json<KeyJson>().id).toBe(key.id);
    }
    expect((await run('spend', '--key', key.prefix, '--json')).code).toBe(0);
    const missing = await run('keys', 'show', 'nobody');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no key "nobody"');
  });
});

describe('keys list / update / revoke / rotate', () => {
  it('lists live keys, and revoked ones with --all, filtered by tenant', async () => {
    await run('keys', 'create', '--name', 'a1', '--tenant', 'acme');
    await run('keys', 'create', '--name', 'b1', '--tenant', 'beta');
    await run('keys', 'create', '--name', 'a2', '--tenant', 'acme');
    await run('keys', 'revoke', 'a2');
    const live = (await run('keys', 'list', '--json')).json<KeyJson[]>();
    expect(live.map((k) => k.name)).toEqual(['a1', 'b1']);
    const all = (await run('keys', 'list', '--all', '--tenant', 'acme', '--json')).json<KeyJson[]>();
    expect(all.map((k) => [k.name, k.status])).toEqual([
      ['a1', 'active'],
      ['a2', 'revoked'],
    ]);
    const table = (await run('keys', 'list')).stdout.split('\n');
    expect(table[0]).toMatch(/^name\s+id\s+prefix\s+tenant\s+status\s+limits\s+budget\s+created$/);
    expect(table[1]).toMatch(/^-+\s+-+/);
  });

  it('updates limits (replacing them), budget, models, expiry, tenant and metadata', async () => {
    await run('keys', 'create', '--name', 'dave', '--rpm', '10', '--budget-usd', '5', '--models', 'gpt-4o', '--meta', 'a=1', '--meta', 'b=2');
    let key = (
      await run(
        'keys',
        'update',
        'dave',
        '--tpm',
        '1000',
        '--budget-period',
        'day',
        '--all-models',
        '--tenant',
        'newco',
        '--expires',
        '2h',
        '--unset-meta',
        'a',
        '--json',
      )
    ).json<KeyJson>();
    expect(key.policy.limits.map((l) => l.name)).toEqual(['tokens-per-min']);
    expect(key.policy.budget).toEqual({ microUsd: 5_000_000, period: 'day' });
    expect(key.policy.models).toBeUndefined();
    expect(key.tenant).toBe('newco');
    expect(key.metadata).toEqual({ b: '2' });
    key = (await run('keys', 'update', 'dave', '--clear-limits', '--no-budget', '--no-tenant', '--no-expiry', '--name', 'david', '--json')).json<KeyJson>();
    expect(key).toMatchObject({ name: 'david', tenant: null, expiresAt: null, policy: { limits: [] } });
    expect(key.policy.budget).toBeUndefined();
    const bad = await run('keys', 'update', 'david', '--limit', 'requests:1/min,burst=0');
    expect(bad.code).toBe(2);
  });

  it('revokes (idempotently) and refuses to change a revoked key', async () => {
    await run('keys', 'create', '--name', 'erin');
    expect((await run('keys', 'revoke', 'erin', '--json')).json<KeyJson>().status).toBe('revoked');
    expect((await run('keys', 'revoke', 'erin', '--json')).json<KeyJson>().status).toBe('revoked');
    const update = await run('keys', 'update', 'erin', '--rpm', '5');
    expect(update.code).toBe(2);
    expect(update.stderr).toContain('revoked');
    // The name is free again for a new key.
    expect((await run('keys', 'create', '--name', 'erin')).code).toBe(0);
  });

  it('rotates: a new secret for the same id and policy, the old hash gone', async () => {
    const before = (await run('keys', 'create', '--name', 'frank', '--rpm', '7', '--json')).json<KeyJson>();
    const after = (await run('keys', 'rotate', 'frank', '--json')).json<KeyJson>();
    expect(after.id).toBe(before.id);
    expect(after.key).not.toBe(before.key);
    expect(after.policy).toEqual(before.policy);
    const database = openDatabase(db);
    const hashes = database.sqlite.prepare('SELECT key_hash FROM api_keys').all() as Array<{ key_hash: string }>;
    database.close();
    expect(hashes.map((h) => h.key_hash)).toEqual([hashKey(after.key!)]);
  });
});

describe('tenants', () => {
  it('creates, lists, shows and updates tenants with their own limits and budget', async () => {
    const created = await run('tenants', 'create', 'acme', '--rpm', '100', '--budget-usd', '50', '--json');
    expect(created.code).toBe(0);
    await run('keys', 'create', '--name', 'k1', '--tenant', 'acme');
    const shown = (await run('tenants', 'show', 'acme', '--json')).json<{ keys: number; policy: { limits: unknown[] } }>();
    expect(shown.keys).toBe(1);
    expect(shown.policy.limits).toHaveLength(1);
    const updated = (await run('tenants', 'update', 'acme', '--clear-limits', '--no-budget', '--json')).json<{
      policy: { limits: unknown[]; budget?: unknown };
    }>();
    expect(updated.policy).toEqual({ limits: [] });
    expect((await run('tenants', 'list')).stdout).toMatch(/^name\s+id\s+keys\s+limits\s+budget/);
    expect((await run('tenants', 'create', 'acme')).code).toBe(2);
  });
});

describe('migrate and help', () => {
  it('migrates a new file and reports an up-to-date one', async () => {
    const fresh = await run('migrate', '--json');
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] };
    expect(fresh.json<{ applied: number }>().applied).toBe(journal.entries.length);
    const database = openDatabase(db, { migrate: false });
    const tables = (database.sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map(
      (t) => t.name,
    );
    database.close();
    expect(tables).toEqual(expect.arrayContaining(['api_keys', 'ledger', 'rollups_daily', 'rollups_hourly', 'tenants']));
    expect((await run('migrate')).stdout).toContain('is up to date');
  });

  it('has --help on every command', async () => {
    for (const args of [[], ['keys'], ['keys', 'create'], ['keys', 'update'], ['tenants'], ['spend'], ['estimate'], ['serve'], ['demo'], ['migrate']]) {
      const result = await cli(...args, '--help');
      expect(result.code, args.join(' ')).toBe(0);
      expect(result.stdout, args.join(' ')).toContain('Usage: tollgate');
    }
  });
});
