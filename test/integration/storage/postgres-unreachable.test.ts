/**
 * PostgreSQL not answering is a 503 `ledger_unavailable` from every store
 * kept there, naming PostgreSQL and never the URL's password: the admin API
 * and the CLI say "try again shortly", not a driver error and a 500.
 */
import { expect, it } from 'vitest';
import { openPg } from '../../../src/storage/postgres/open.js';
import { openKeyStore } from '../../../src/storage/keys.js';

it('every key and tenant operation is a 503 ledger_unavailable that names PostgreSQL and no secret', async () => {
  // A port nothing listens on: the connection is refused at once.
  const pool = openPg('postgres://postgres:hunter2-secret@127.0.0.1:1/tollgate', { connectTimeoutMs: 1000 });
  try {
    const keys = openKeyStore({ kind: 'postgres', pool });
    const attempts = [
      keys.createKey({ name: 'k', policy: { limits: [] } }),
      keys.listKeys(),
      keys.getKey('k'),
      keys.updateKey('k', { name: 'j' }),
      keys.revokeKey('k'),
      keys.rotateKey('k'),
      keys.createTenant('acme'),
      keys.listTenants(),
      keys.getTenant('acme'),
      keys.updateTenant('acme', { maxInFlight: 1 }),
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
