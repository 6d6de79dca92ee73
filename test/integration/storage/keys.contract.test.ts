/**
 * The key store's contract (src/storage/keys.ts), over a SQLite file and over
 * PostgreSQL: the same operations give the same answers and the same errors,
 * whichever database the CLI and the admin API are working on.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import type { KeyStore } from '../../../src/storage/keys.js';
import { openKeyStore } from '../../../src/storage/index.js';
import { hashKey } from '../../../src/storage/key-format.js';
import { parseLimit, type Policy } from '../../../src/domain/policy.js';

const NO_LIMITS: Policy = { limits: [] };
const rpm = (n: number) => parseLimit(`requests:${n}/min`);

describeBackends('key store', (fixture) => {
  let clock = Date.UTC(2026, 0, 10, 12);
  const open = async (): Promise<KeyStore> => openKeyStore(await fixture.fresh(), { now: () => clock });

  it('issues a key shown once, found by id, prefix or name, and creates the tenant it names', async () => {
    const store = await open();
    const issued = await store.createKey({
      name: 'alice',
      tenant: 'acme',
      policy: { limits: [rpm(60)], models: ['gpt-4o-mini'] },
      expiresAt: clock + 86_400_000,
      metadata: { team: 'search' },
    });
    expect(issued.key).toMatch(/^tg-[0-9A-Za-z]{43}$/);
    expect(issued.key.startsWith(issued.view.prefix)).toBe(true);
    expect(issued.view).toMatchObject({
      name: 'alice',
      tenant: 'acme',
      status: 'active',
      createdAt: clock,
      updatedAt: clock,
      revokedAt: null,
      rotatedAt: null,
      expiresAt: clock + 86_400_000,
      policy: { limits: [rpm(60)], models: ['gpt-4o-mini'] },
      metadata: { team: 'search' },
    });
    expect(JSON.stringify(issued.view)).not.toContain(issued.key);
    expect(JSON.stringify(issued.view)).not.toContain(hashKey(issued.key));
    for (const ref of [issued.view.id, issued.view.prefix, 'alice', ' alice ']) expect(await store.getKey(ref)).toEqual(issued.view);
    const tenant = await store.getTenant('acme');
    expect(tenant).toMatchObject({ name: 'acme', keys: 1, policy: NO_LIMITS });
    expect(issued.view.tenantId).toBe(tenant.id);
  });

  it('refuses a second live key of one name, a bad name and an invalid policy', async () => {
    const store = await open();
    await store.createKey({ name: 'alice', policy: NO_LIMITS });
    await expect(store.createKey({ name: 'alice', policy: NO_LIMITS })).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.createKey({ name: 'no spaces', policy: NO_LIMITS })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(store.createKey({ name: 'bad', policy: { limits: [{ ...rpm(5), burst: -1 }] } })).rejects.toMatchObject({
      code: 'invalid_policy',
    });
    await expect(store.getKey('nobody')).rejects.toMatchObject({ code: 'not_found' });
    expect((await store.listKeys()).map((k) => k.name)).toEqual(['alice']);
  });

  it('lists keys by name, of one tenant, and revoked ones only when asked', async () => {
    const store = await open();
    await store.createKey({ name: 'carol', tenant: 'acme', policy: NO_LIMITS });
    await store.createKey({ name: 'alice', policy: NO_LIMITS });
    await store.createKey({ name: 'bob', tenant: 'acme', policy: NO_LIMITS });
    await store.revokeKey('bob');
    expect((await store.listKeys()).map((k) => k.name)).toEqual(['alice', 'carol']);
    expect((await store.listKeys({ includeRevoked: true })).map((k) => k.name)).toEqual(['alice', 'bob', 'carol']);
    expect((await store.listKeys({ tenant: 'acme' })).map((k) => k.name)).toEqual(['carol']);
    expect((await store.listKeys({ tenant: 'acme', includeRevoked: true })).map((k) => k.name)).toEqual(['bob', 'carol']);
    await expect(store.listKeys({ tenant: 'nobody' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('updates what a patch names, clears with null, and keeps the rest', async () => {
    const store = await open();
    const { view } = await store.createKey({
      name: 'alice',
      tenant: 'acme',
      policy: { limits: [rpm(60)], budget: { microUsd: 5_000_000, period: 'day' }, models: ['gpt-4o'], maxInFlight: 3 },
      metadata: { team: 'search', owner: 'ann' },
    });
    clock += 1000;
    const updated = await store.updateKey('alice', {
      name: 'alice-2',
      tenant: 'globex',
      models: null,
      maxInFlight: 5,
      tagBudgets: [{ tag: 'search', microUsd: 1_000_000, period: 'day' }],
      metadata: { owner: null, cost: 'center-7' },
      expiresAt: clock + 60_000,
    });
    expect(updated).toMatchObject({
      id: view.id,
      name: 'alice-2',
      tenant: 'globex',
      updatedAt: clock,
      createdAt: view.createdAt,
      expiresAt: clock + 60_000,
      metadata: { team: 'search', cost: 'center-7' },
      policy: {
        limits: [rpm(60)],
        budget: { microUsd: 5_000_000, period: 'day' },
        maxInFlight: 5,
        tagBudgets: [{ tag: 'search', microUsd: 1_000_000, period: 'day' }],
      },
    });
    expect(updated.policy.models).toBeUndefined();
    expect(await store.getKey(view.id)).toEqual(updated);
    expect((await store.updateKey(view.id, { tenant: null, budget: null, maxInFlight: null })).policy).toEqual({
      limits: [rpm(60)],
      tagBudgets: [{ tag: 'search', microUsd: 1_000_000, period: 'day' }],
    });
    expect((await store.getKey(view.id)).tenant).toBeNull();
    expect((await store.getTenant('acme')).keys).toBe(0);

    await store.createKey({ name: 'bob', policy: NO_LIMITS });
    await expect(store.updateKey('bob', { name: 'alice-2' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.updateKey('bob', { limits: [{ ...rpm(5), burst: -1 }] })).rejects.toMatchObject({ code: 'invalid_policy' });
    await expect(store.updateKey('nobody', { name: 'x' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('revokes once, frees the name, and refuses to change a revoked key', async () => {
    const store = await open();
    const { view } = await store.createKey({ name: 'alice', tenant: 'acme', policy: NO_LIMITS });
    clock += 1000;
    const revoked = await store.revokeKey('alice');
    expect(revoked).toMatchObject({ id: view.id, status: 'revoked', revokedAt: clock });
    clock += 1000;
    expect(await store.revokeKey(view.id)).toEqual(revoked);
    expect((await store.getTenant('acme')).keys).toBe(0);
    await expect(store.updateKey(view.id, { name: 'x' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(store.rotateKey(view.id)).rejects.toMatchObject({ code: 'invalid_request' });

    // The name is free again; it names the live key, and a lone revoked key by its name too.
    const again = await store.createKey({ name: 'alice', policy: NO_LIMITS });
    expect((await store.getKey('alice')).id).toBe(again.view.id);
    await store.createKey({ name: 'bob', policy: NO_LIMITS });
    await store.revokeKey('bob');
    expect((await store.getKey('bob')).status).toBe('revoked');
    await store.revokeKey('alice');
    await expect(store.getKey('alice')).rejects.toMatchObject({ code: 'ambiguous_reference' });
  });

  it('rotates the secret of the same key', async () => {
    const store = await open();
    const first = await store.createKey({ name: 'alice', policy: { limits: [rpm(60)] } });
    clock += 1000;
    const rotated = await store.rotateKey('alice');
    expect(rotated.key).not.toBe(first.key);
    expect(rotated.key.startsWith(rotated.view.prefix)).toBe(true);
    expect(rotated.view).toMatchObject({ id: first.view.id, name: 'alice', rotatedAt: clock, status: 'active', policy: { limits: [rpm(60)] } });
    expect((await store.getKey(rotated.view.prefix)).id).toBe(first.view.id);
  });

  it('shows a key past its expiry as expired', async () => {
    const store = await open();
    await store.createKey({ name: 'brief', policy: NO_LIMITS, expiresAt: clock + 1000 });
    expect((await store.getKey('brief')).status).toBe('active');
    clock += 1000;
    expect((await store.getKey('brief')).status).toBe('expired');
  });

  it('creates tenants with every tenant field, lists them by name with their live keys, and finds them by id or name', async () => {
    const store = await open();
    const policy = {
      limits: [rpm(100)],
      budget: { microUsd: 5_000_000, period: 'day' },
      budgets: [{ microUsd: 50_000_000, period: 'month' }],
      maxInFlight: 4,
    } as const;
    const globex = await store.createTenant('globex', policy);
    expect(globex).toMatchObject({ name: 'globex', keys: 0, createdAt: clock, updatedAt: clock, policy });
    expect(await store.createTenant('acme')).toMatchObject({ name: 'acme', policy: NO_LIMITS });
    await expect(store.createTenant('acme')).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.createTenant('no spaces')).rejects.toMatchObject({ code: 'invalid_request' });
    await store.createKey({ name: 'a', tenant: 'globex', policy: NO_LIMITS });
    await store.createKey({ name: 'b', tenant: 'globex', policy: NO_LIMITS });
    await store.revokeKey('b');
    expect((await store.listTenants()).map((t) => [t.name, t.keys])).toEqual([
      ['acme', 0],
      ['globex', 1],
    ]);
    expect(await store.getTenant(globex.id)).toEqual({ ...globex, keys: 1 });
    await expect(store.getTenant('nobody')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('updates a tenant: renamed, fields replaced or cleared, names kept unique', async () => {
    const store = await open();
    const acme = await store.createTenant('acme', { limits: [rpm(10)], budget: { microUsd: 1_000_000, period: 'month' } });
    await store.createTenant('globex');
    await store.createKey({ name: 'k', tenant: 'acme', policy: NO_LIMITS });
    clock += 1000;
    const updated = await store.updateTenant('acme', { name: 'acme-2', budget: null, budgets: [{ microUsd: 9_000_000, period: 'week' }], maxInFlight: 2 });
    expect(updated).toMatchObject({
      id: acme.id,
      name: 'acme-2',
      updatedAt: clock,
      keys: 1,
      policy: { limits: [rpm(10)], budgets: [{ microUsd: 9_000_000, period: 'week' }], maxInFlight: 2 },
    });
    expect(updated.policy.budget).toBeUndefined();
    expect((await store.getKey('k')).tenant).toBe('acme-2');
    expect((await store.updateTenant(acme.id, { limits: [], budgets: null, maxInFlight: null })).policy).toEqual(NO_LIMITS);
    await expect(store.updateTenant('acme-2', { name: 'globex' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.updateTenant('nobody', { maxInFlight: 1 })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('moves a key into an existing tenant or a new one', async () => {
    const store = await open();
    await store.createTenant('acme', { limits: [rpm(10)] });
    await store.createKey({ name: 'k', policy: NO_LIMITS });
    expect((await store.updateKey('k', { tenant: 'acme' })).tenant).toBe('acme');
    expect((await store.getTenant('acme')).policy).toEqual({ limits: [rpm(10)] });
    expect((await store.updateKey('k', { tenant: 'fresh' })).tenant).toBe('fresh');
    expect((await store.listTenants()).map((t) => [t.name, t.keys])).toEqual([
      ['acme', 0],
      ['fresh', 1],
    ]);
  });
});
