/**
 * The store's operations taken for an actor (src/admin/ops.ts, `as(actor)`):
 * what every surface writes through — the CLI, the admin API and the
 * dashboard. The role is enforced here too, whichever surface forgot to ask,
 * and a refused write leaves no audit row.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ACTOR, type Actor } from '../../../src/domain/admins.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { backendAdminOps } from '../../support/admin-ops.js';

const VIEWER: Actor = { kind: 'admin', id: 'adm_viewer000000', name: 'val', role: 'viewer' };
const OPERATOR: Actor = { kind: 'admin', id: 'adm_operator0000', name: 'olga', role: 'operator' };
let files: TempDatabase[] = [];
afterEach(() => {
  for (const file of files) file.remove();
  files = [];
});

function opsOnFile() {
  const file = openTempDatabase();
  files.push(file);
  return backendAdminOps({ kind: 'sqlite', database: file.database });
}

describe('operations for an actor', () => {
  it('refuses a viewer every write with 403 naming the role, and records nothing', async () => {
    const ops = opsOnFile();
    await ops.as(OPERATOR).createKey({ name: 'k', policy: { limits: [] } });
    const viewer = ops.as(VIEWER);
    const refusals = [
      viewer.createKey({ name: 'x', policy: { limits: [] } }),
      viewer.updateKey('k', { models: ['gpt-4o'] }),
      viewer.revokeKey('k'),
      viewer.rotateKey('k'),
      viewer.resumeKey('k'),
      viewer.createTenant('t', {}),
      viewer.updateTenant('t', {}),
      viewer.createTenantToken({ tenant: 't' }),
      viewer.revokeTenantToken('dtk_x'),
    ];
    for (const refusal of refusals)
      await expect(refusal).rejects.toMatchObject({ code: 'insufficient_role', status: 403, message: expect.stringContaining('operator') });
    await expect(viewer.listAdmins()).rejects.toMatchObject({ code: 'insufficient_role', message: expect.stringContaining('admin role') });
    expect(await viewer.listKeys({})).toHaveLength(1);
    const trail = await viewer.audit({});
    expect(trail.data.map((r) => `${r.action} by ${r.actor.name}`)).toEqual(['key.create by olga']);
  });

  it('lets an operator change keys and tenant tokens but not admins; the bootstrap admin does everything', async () => {
    const ops = opsOnFile();
    const operator = ops.as(OPERATOR);
    await operator.createTenant('acme', {});
    const token = await operator.createTenantToken({ tenant: 'acme', label: 'finance' });
    await operator.revokeTenantToken(token.view.id);
    await expect(operator.createAdmin({ name: 'eve', role: 'admin' })).rejects.toMatchObject({ code: 'insufficient_role' });
    const boss = ops.as(BOOTSTRAP_ACTOR);
    const made = await boss.createAdmin({ name: 'eve', role: 'viewer' });
    expect(made.view.createdBy).toBe('bootstrap');
    await boss.revokeAdmin('eve');
    const trail = await boss.audit({ limit: 10 });
    expect(trail.data.map((r) => `${r.action} by ${r.actor.name}`)).toEqual([
      'admin.revoke by bootstrap',
      'admin.create by bootstrap',
      'tenant-token.revoke by olga',
      'tenant-token.create by olga',
      'tenant.create by olga',
    ]);
    expect((await boss.audit({ tenant: 'acme' })).data.map((r) => r.action)).toEqual(['tenant.create']);
    expect((await boss.audit({ actor: 'olga', action: 'tenant-token.create' })).data).toHaveLength(1);
    await expect(boss.audit({ key: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(boss.audit({ since: 'last tuesday' })).rejects.toMatchObject({ code: 'invalid_value', param: 'since' });
  });
});
