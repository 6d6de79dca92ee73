/** What each role may do (src/domain/admins.ts): viewers read, operators also operate, admins also manage admins. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ADMIN_ROLES, actorName, actorRole, permissionOf, requiredRole, roleAllows, type AdminPermission } from '../../../src/domain/admins.js';

const PERMISSIONS: readonly AdminPermission[] = ['read', 'operate', 'manage-admins'];

describe('roles', () => {
  it('grants viewers reads, operators writes too, admins everything', () => {
    expect(PERMISSIONS.filter((p) => roleAllows('viewer', p))).toEqual(['read']);
    expect(PERMISSIONS.filter((p) => roleAllows('operator', p))).toEqual(['read', 'operate']);
    expect(PERMISSIONS.filter((p) => roleAllows('admin', p))).toEqual(['read', 'operate', 'manage-admins']);
  });

  it('is monotonic: a role has everything the roles below it have, and the role a permission needs has it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ADMIN_ROLES), fc.constantFrom(...ADMIN_ROLES), fc.constantFrom(...PERMISSIONS), (a, b, permission) => {
        const [low, high] = ADMIN_ROLES.indexOf(a) <= ADMIN_ROLES.indexOf(b) ? [a, b] : [b, a];
        if (roleAllows(low, permission)) expect(roleAllows(high, permission)).toBe(true);
        expect(roleAllows(requiredRole(permission), permission)).toBe(true);
      }),
    );
  });

  it('asks reads of GET and HEAD, writes of the rest, and admin management of anything under /admins', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT'),
        fc.constantFrom('/keys', '/tenants/x', '/spend', '/audit'),
        (method, path) => {
          expect(permissionOf(method, path)).toBe(method === 'GET' || method === 'HEAD' ? 'read' : 'operate');
          expect(permissionOf(method, `/admins${path}`)).toBe('manage-admins');
        },
      ),
    );
    expect(permissionOf('GET', '/admins')).toBe('manage-admins');
    expect(permissionOf('GET', '/adminsx')).toBe('read');
  });

  it('names actors as the trail writes them, and acts with the right role', () => {
    expect(actorName({ kind: 'admin', id: 'adm_1', name: 'alice', role: 'viewer' })).toBe('alice');
    expect(actorName({ kind: 'bootstrap' })).toBe('bootstrap');
    expect(actorName({ kind: 'cli', user: 'bob' })).toBe('cli:bob');
    expect(actorRole({ kind: 'admin', id: 'adm_1', name: 'alice', role: 'viewer' })).toBe('viewer');
    expect(actorRole({ kind: 'bootstrap' })).toBe('admin');
    expect(actorRole({ kind: 'cli', user: 'bob' })).toBe('admin');
  });
});
