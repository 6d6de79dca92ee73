/**
 * The admin store's contract (src/storage/admins.ts), over a SQLite file and
 * PostgreSQL: an admin's token is shown once and kept only as its hash, names
 * are unique among active admins, a revoked admin is refused by its token and
 * by its id (what a session names), and bad input gets the same errors.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { openAdmins } from '../../../src/storage/index.js';
import { hashKey } from '../../../src/storage/key-format.js';
import { cliActor } from '../../../src/domain/admins.js';
import type { Backend } from '../../../src/storage/backend.js';

const NOW = Date.UTC(2026, 10, 20, 12);
const CLI = cliActor('root');

async function storedRow(backend: Backend, id: string): Promise<Record<string, unknown>> {
  if (backend.kind === 'sqlite') return backend.database.sqlite.prepare('SELECT * FROM admins WHERE id = ?').get(id) as Record<string, unknown>;
  return (await backend.pool.query<Record<string, unknown>>('SELECT * FROM admins WHERE id = $1', [id])).rows[0]!;
}

describeBackends('admin store', (fixture) => {
  it('creates an admin whose token is shown once and stored only as its hash', async () => {
    const backend = await fixture.fresh();
    const admins = openAdmins(backend);
    const issued = await admins.create({ name: 'alice', role: 'operator' }, NOW, CLI);
    expect(issued.token).toMatch(/^tga-[0-9A-Za-z]{43}$/);
    expect(issued.view).toMatchObject({ name: 'alice', role: 'operator', status: 'active', createdAt: NOW, createdBy: 'cli:root', revokedAt: null });
    expect(issued.view.prefix).toBe(issued.token.slice(0, 10));
    const row = await storedRow(backend, issued.view.id);
    expect(row.token_hash).toBe(hashKey(issued.token));
    expect(JSON.stringify(row)).not.toContain(issued.token);
    expect(JSON.stringify(await admins.list())).not.toContain(issued.token);
    const actor = { kind: 'admin', id: issued.view.id, name: 'alice', role: 'operator' };
    expect(await admins.activeAdmin({ secret: issued.token })).toEqual(actor);
    expect(await admins.activeAdmin({ adminId: issued.view.id })).toEqual(actor);
    // Another last character (a random token ends in "x" one time in 62).
    const wrong = `${issued.token.slice(0, -1)}${issued.token.endsWith('x') ? 'y' : 'x'}`;
    expect(await admins.activeAdmin({ secret: wrong })).toBeUndefined();
  });

  it('revokes by name or id: its token and sessions are refused, and the name is free again', async () => {
    const admins = openAdmins(await fixture.fresh());
    const first = await admins.create({ name: 'bob', role: 'admin' }, NOW, CLI);
    await expect(admins.create({ name: 'bob', role: 'viewer' }, NOW, CLI)).rejects.toMatchObject({ code: 'conflict', param: 'name' });
    const revoked = await admins.revoke('bob', NOW + 1, CLI);
    expect(revoked).toMatchObject({ status: 'revoked', revokedAt: NOW + 1 });
    expect(await admins.revoke(first.view.id, NOW + 2, CLI)).toMatchObject({ revokedAt: NOW + 1 });
    expect(await admins.activeAdmin({ secret: first.token })).toBeUndefined();
    expect(await admins.activeAdmin({ adminId: first.view.id })).toBeUndefined();
    const second = await admins.create({ name: 'bob', role: 'viewer' }, NOW + 3, CLI);
    expect((await admins.list()).map((a) => [a.name, a.status])).toEqual([
      ['bob', 'active'],
      ['bob', 'revoked'],
    ]);
    // The name now means the active one.
    expect(await admins.revoke('bob', NOW + 4, CLI)).toMatchObject({ id: second.view.id });
  });

  it('refuses bad names, bad roles and unknown admins with the same errors', async () => {
    const admins = openAdmins(await fixture.fresh());
    for (const name of ['', 'has space', 'cli:bob', 'bootstrap', 'x'.repeat(65)])
      await expect(admins.create({ name, role: 'viewer' }, NOW, CLI)).rejects.toMatchObject({ code: 'invalid_value', param: 'name' });
    await expect(admins.create({ name: 'ok', role: 'root' as 'admin' }, NOW, CLI)).rejects.toMatchObject({ code: 'invalid_value', param: 'role' });
    await expect(admins.revoke('nobody', NOW, CLI)).rejects.toMatchObject({ code: 'not_found', param: 'admin' });
    expect(await admins.list()).toEqual([]);
  });
});
