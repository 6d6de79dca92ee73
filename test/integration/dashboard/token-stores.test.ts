/**
 * The dashboard token stores (src/dashboard/tenant-tokens.ts): the same cases
 * over the SQLite file and PostgreSQL, so a replica's tokens behave exactly
 * as one host's — issued once and stored hashed, listed newest first, revoked
 * by id or prefix (twice changes nothing), refused once revoked or expired,
 * bad input refused with the same errors. And PostgreSQL unreachable is a 503
 * `ledger_unavailable`, never an answer from somewhere else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgDashboardTokens } from '../../../src/storage/postgres/tenant-tokens.js';
import { sqliteDashboardTokens } from '../../../src/storage/sqlite/tenant-tokens.js';
import type { DashboardTokenStore } from '../../../src/storage/tenant-tokens.js';
import { openPg } from '../../../src/storage/postgres/open.js';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');

interface StoreUnderTest {
  readonly tokens: DashboardTokenStore;
  /** Every stored column of a token, as the store holds it. */
  stored(id: string): Promise<Record<string, unknown>>;
}

let file: TempDatabase;
let pg: TempPostgres;
const stores: Record<'sqlite' | 'postgres', StoreUnderTest> = {} as never;

beforeAll(async () => {
  file = openTempDatabase();
  pg = await createTempPostgres();
  const local = new KeyStore(file.database);
  const shared = new PgKeyStore(pg.pool);
  for (const name of ['acme', 'globex']) {
    local.createTenant(name);
    await shared.createTenant(name);
  }
  stores.sqlite = {
    tokens: sqliteDashboardTokens(file.database),
    stored: async (id) => file.database.sqlite.prepare('SELECT * FROM dashboard_tokens WHERE id = ?').get(id) as Record<string, unknown>,
  };
  stores.postgres = {
    tokens: pgDashboardTokens(pg.pool),
    stored: async (id) => (await pg.pool.query<Record<string, unknown>>('SELECT * FROM dashboard_tokens WHERE id = $1', [id])).rows[0]!,
  };
});

afterAll(async () => {
  file?.remove();
  await pg?.drop();
});

describe.each(['sqlite', 'postgres'] as const)('on %s', (kind) => {
  const store = () => stores[kind];

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

describe('PostgreSQL unreachable', () => {
  it('every operation is a 503 ledger_unavailable that names PostgreSQL and no secret', async () => {
    // A port nothing listens on: the connection is refused at once.
    const pool = openPg('postgres://postgres:hunter2-secret@127.0.0.1:1/tollgate', { connectTimeoutMs: 1000 });
    try {
      const tokens = pgDashboardTokens(pool);
      const attempts = [
        tokens.activeViewer({ tokenId: 'dtk_abcdefgh1234' }, NOW),
        tokens.activeViewer({ secret: `tgd-${'b'.repeat(43)}` }, NOW),
        tokens.create({ tenant: 'acme' }, NOW),
        tokens.list({}, NOW),
        tokens.revoke('dtk_abcdefgh1234', NOW),
      ];
      for (const attempt of attempts) {
        const error = (await attempt.catch((caught: unknown) => caught)) as { code: string; status: number; message: string };
        expect(error).toMatchObject({ code: 'ledger_unavailable', status: 503 });
        expect(error.message).toContain('PostgreSQL');
        expect(error.message).not.toContain('hunter2');
      }
    } finally {
      await pool.end();
    }
  });
});
