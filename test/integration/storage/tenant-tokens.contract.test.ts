/**
 * The dashboard token store's contract (src/storage/tenant-tokens.ts), over
 * the SQLite file and PostgreSQL, so a replica's tokens behave exactly as one
 * host's — issued once and stored hashed, listed newest first, revoked by id
 * or prefix (twice changes nothing), refused once revoked or expired, bad
 * input refused with the same errors. (PostgreSQL unreachable:
 * postgres-unreachable.test.ts.)
 */
import { beforeEach, expect, it } from 'vitest';
import type { Backend } from '../../../src/storage/backend.js';
import { openKeyStore } from '../../../src/storage/index.js';
import type { DashboardTokenStore } from '../../../src/storage/tenant-tokens.js';
import { openDashboardTokens } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');

interface StoreUnderTest {
  readonly tokens: DashboardTokenStore;
  /** Every stored column of a token, as the store holds it. */
  stored(id: string): Promise<Record<string, unknown>>;
}

/** A token's row as the database holds it (the test looks under the interface, at what is kept). */
async function storedRow(backend: Backend, id: string): Promise<Record<string, unknown>> {
  if (backend.kind === 'sqlite') return backend.database.sqlite.prepare('SELECT * FROM dashboard_tokens WHERE id = ?').get(id) as Record<string, unknown>;
  return (await backend.pool.query<Record<string, unknown>>('SELECT * FROM dashboard_tokens WHERE id = $1', [id])).rows[0]!;
}

describeBackends('dashboard token store', (fixture) => {
  let current: StoreUnderTest;
  const store = () => current;
  beforeEach(async () => {
    const backend = await fixture.fresh();
    const keys = openKeyStore(backend);
    for (const name of ['acme', 'globex']) await keys.createTenant(name);
    current = { tokens: openDashboardTokens(backend), stored: (id) => storedRow(backend, id) };
  });

  it('issues a token once and keeps only its hash and prefix', async () => {
    const issued = await store().tokens.create({ tenant: 'acme', label: '  acme finance  ' }, NOW);
    expect(issued.token).toMatch(/^tgd-[0-9A-Za-z]{43}$/);
    expect(issued.view).toMatchObject({ tenant: 'acme', label: 'acme finance', createdAt: NOW, expiresAt: null, revokedAt: null, status: 'active' });
    expect(issued.view.prefix).toBe(issued.token.slice(0, 10));
    const row = await store().stored(issued.view.id);
    expect(JSON.stringify(row)).not.toContain(issued.token);
    expect(JSON.stringify(issued.view)).not.toContain(issued.token);
    expect(await store().tokens.activeViewer({ secret: issued.token }, NOW)).toEqual({
      tokenId: issued.view.id,
      tenantId: issued.view.tenantId,
      tenant: 'acme',
      expiresAt: null,
    });
    expect(await store().tokens.activeViewer({ tokenId: issued.view.id }, NOW)).toMatchObject({ tenant: 'acme' });
  });

  it('lists newest first, of one tenant by id or name, never a secret', async () => {
    await store().tokens.create({ tenant: 'acme' }, NOW);
    const older = await store().tokens.create({ tenant: 'globex' }, NOW + 1_000);
    const newer = await store().tokens.create({ tenant: 'globex', label: 'ops' }, NOW + 2_000);
    const globexId = older.view.tenantId;
    for (const ref of ['globex', globexId]) {
      const listed = await store().tokens.list({ tenant: ref }, NOW + 3_000);
      expect(listed.map((view) => view.id)).toEqual([newer.view.id, older.view.id]);
      expect(JSON.stringify(listed)).not.toContain(newer.token);
    }
    const all = await store().tokens.list({}, NOW + 3_000);
    expect(all.slice(0, 2).map((view) => view.id)).toEqual([newer.view.id, older.view.id]);
    expect(all.some((view) => view.tenant === 'acme')).toBe(true);
  });

  it('revoked by prefix: refused by secret and by id; revoking again changes nothing', async () => {
    const issued = await store().tokens.create({ tenant: 'acme' }, NOW);
    const revoked = await store().tokens.revoke(issued.view.prefix, NOW + 5_000);
    expect(revoked).toMatchObject({ id: issued.view.id, status: 'revoked', revokedAt: NOW + 5_000, tenant: 'acme' });
    expect(await store().tokens.activeViewer({ secret: issued.token }, NOW + 5_000)).toBeUndefined();
    expect(await store().tokens.activeViewer({ tokenId: issued.view.id }, NOW + 5_000)).toBeUndefined();
    expect(await store().tokens.revoke(issued.view.id, NOW + 9_000)).toEqual(revoked);
  });

  it('expired: refused from its expiry on, and listed as expired', async () => {
    const issued = await store().tokens.create({ tenant: 'acme', expiresAt: NOW + 60_000 }, NOW);
    expect(await store().tokens.activeViewer({ secret: issued.token }, NOW + 59_999)).toMatchObject({ expiresAt: NOW + 60_000 });
    expect(await store().tokens.activeViewer({ secret: issued.token }, NOW + 60_000)).toBeUndefined();
    expect(await store().tokens.activeViewer({ tokenId: issued.view.id }, NOW + 60_000)).toBeUndefined();
    const listed = await store().tokens.list({ tenant: 'acme' }, NOW + 60_000);
    expect(listed.find((view) => view.id === issued.view.id)?.status).toBe('expired');
  });

  it('refuses bad input and unknown references with the same errors', async () => {
    await expect(store().tokens.create({ tenant: 'nobody' }, NOW)).rejects.toMatchObject({ code: 'not_found', param: 'tenant' });
    await expect(store().tokens.create({ tenant: 'acme', expiresAt: NOW }, NOW)).rejects.toMatchObject({ code: 'invalid_value', param: 'expires' });
    await expect(store().tokens.create({ tenant: 'acme', label: 'x'.repeat(201) }, NOW)).rejects.toMatchObject({ code: 'invalid_value', param: 'label' });
    await expect(store().tokens.list({ tenant: 'nobody' }, NOW)).rejects.toMatchObject({ code: 'not_found' });
    await expect(store().tokens.revoke('dtk_nothing-here', NOW)).rejects.toMatchObject({ code: 'not_found', param: 'token' });
    expect(await store().tokens.activeViewer({ secret: `tgd-${'A'.repeat(43)}` }, NOW)).toBeUndefined();
    expect(await store().tokens.activeViewer({ tokenId: 'dtk_unknown123' }, NOW)).toBeUndefined();
  });
});
