/**
 * The admin operations' contract (src/admin/ops.ts): the CLI gets the same
 * answers and the same errors from this installation's store — a SQLite file
 * or PostgreSQL — and from a remote proxy through its admin API (`--url`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminOps } from '../../../src/admin/ops.js';
import { cliActor } from '../../../src/domain/admins.js';
import { backendAdminOps } from '../../support/admin-ops.js';
import { remoteAdminOps } from '../../../src/admin/client.js';
import { parseLimit } from '../../../src/domain/policy.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';

const ADMIN = 'admin-token-for-ops-contract-0123456789';
const rpm = (n: number) => parseLimit(`requests:${n}/min`);

describe.each(['sqlite', 'postgres', 'remote'] as const)('admin operations (%s)', (kind) => {
  let ops: AdminOps;
  let changes = 0;
  let file: TempDatabase | undefined;
  let pg: TempPostgres | undefined;
  let proxy: TestProxy | undefined;
  beforeAll(async () => {
    const onChange = () => (changes += 1);
    if (kind === 'sqlite') {
      const database = (file = openTempDatabase()).database;
      ops = backendAdminOps({ kind: 'sqlite', database }, { onChange }).as(cliActor('ops-test'));
    } else if (kind === 'postgres') {
      const pool = (pg = await createTempPostgres()).pool;
      ops = backendAdminOps({ kind: 'postgres', pool }, { onChange }).as(cliActor('ops-test'));
    } else {
      proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
      ops = remoteAdminOps(proxy.server.url, ADMIN);
    }
  });
  afterAll(async () => {
    await ops.close();
    file?.remove();
    await pg?.drop();
    await proxy?.close();
  });

  it('issues, finds, updates, rotates and revokes a key', async () => {
    const before = changes;
    const issued = await ops.createKey({ name: 'alice', tenant: 'acme', policy: { limits: [rpm(60)], models: ['gpt-4o'] }, metadata: { team: 'a' } });
    expect(issued.key).toMatch(/^tg-/);
    expect(issued.view).toMatchObject({ name: 'alice', tenant: 'acme', status: 'active', policy: { limits: [rpm(60)], models: ['gpt-4o'] } });
    for (const ref of [issued.view.id, issued.view.prefix, 'alice']) expect(await ops.getKey(ref)).toEqual(issued.view);

    const updated = await ops.updateKey('alice', { models: null, maxInFlight: 2, metadata: { team: null, owner: 'ann' } });
    expect(updated.policy).toEqual({ limits: [rpm(60)], maxInFlight: 2 });
    expect(updated.metadata).toEqual({ owner: 'ann' });

    const rotated = await ops.rotateKey('alice');
    expect(rotated.view.id).toBe(issued.view.id);
    expect(rotated.key).not.toBe(issued.key);
    expect((await ops.revokeKey(issued.view.id)).status).toBe('revoked');
    expect((await ops.listKeys({ tenant: 'acme' })).map((k) => k.name)).toEqual([]);
    expect((await ops.listKeys({ tenant: 'acme', includeRevoked: true })).map((k) => k.name)).toEqual(['alice']);
    // Every change is announced (the proxy refreshes its keys), locally; a remote proxy does its own.
    if (kind !== 'remote') expect(changes - before).toBe(4);
  });

  it('answers with the same errors', async () => {
    await ops.createKey({ name: 'bob', policy: { limits: [] } });
    await expect(ops.createKey({ name: 'bob', policy: { limits: [] } })).rejects.toMatchObject({ code: 'conflict' });
    await expect(ops.getKey('nobody')).rejects.toMatchObject({ code: 'not_found' });
    // Well formed, but no request could ever pass: refused by the policy's rules, not the wire's.
    const unpassable = { ...rpm(5), burst: 2, costSource: { kind: 'header', name: 'x-units', default: 5 } } as const;
    await expect(ops.updateKey('bob', { limits: [unpassable] })).rejects.toMatchObject({ code: 'invalid_policy' });
    await expect(ops.getTenant('nobody')).rejects.toMatchObject({ code: 'not_found' });
    await ops.revokeKey('bob');
    await expect(ops.updateKey('bob', { name: 'robert' })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('creates, lists, shows and updates tenants with every tenant field', async () => {
    const policy = {
      limits: [rpm(100)],
      budget: { microUsd: 5_000_000, period: 'day' },
      budgets: [{ microUsd: 50_000_000, period: 'month' }],
      maxInFlight: 4,
    } as const;
    const created = await ops.createTenant('globex', policy);
    expect(created).toMatchObject({ name: 'globex', keys: 0, policy });
    await expect(ops.createTenant('globex', {})).rejects.toMatchObject({ code: 'conflict' });
    expect(await ops.getTenant(created.id)).toEqual(created);
    expect((await ops.listTenants()).map((t) => t.name)).toContain('globex');
    const updated = await ops.updateTenant('globex', { name: 'globex-2', budget: null, maxInFlight: null });
    expect(updated.policy).toEqual({ limits: [rpm(100)], budgets: [{ microUsd: 50_000_000, period: 'month' }] });
  });

  it('reports spend of a key or tenant, and refuses an unknown one', async () => {
    await ops.createKey({ name: 'spender', tenant: 'spenders', policy: { limits: [] } });
    const report = await ops.spend({ key: 'spender', since: '2026-11-01', by: 'day' });
    expect(report).toMatchObject({ by: 'day', rows: [], pending: 0 });
    expect((await ops.spend({ tenant: 'spenders', since: '2026-11-01', by: 'model' })).rows).toEqual([]);
    await expect(ops.spend({ key: 'nobody', since: '2026-11-01', by: 'day' })).rejects.toMatchObject({ code: 'not_found' });
  });
});
