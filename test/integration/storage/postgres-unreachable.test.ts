/**
 * PostgreSQL not answering is a 503 `ledger_unavailable` from every store
 * kept there, naming PostgreSQL and never the URL's password: the admin API,
 * the dashboard and the CLI say "try again shortly", never a driver error
 * and a 500, and never an answer from the node's own file (whose tokens
 * would be stale: a revoked token that still works there).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openPg, type PgPool } from '../../../src/storage/postgres/open.js';
import { openKeyStore } from '../../../src/storage/index.js';
import { openDashboardTokens } from '../../../src/storage/index.js';
import { openReconciliations } from '../../../src/storage/index.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let pool: PgPool;

beforeAll(() => {
  // A port nothing listens on: the connection is refused at once.
  pool = openPg('postgres://postgres:hunter2-secret@127.0.0.1:1/tollgate', { connectTimeoutMs: 1000 });
});
afterAll(async () => {
  await pool.end();
});

async function expectUnavailable(attempts: readonly Promise<unknown>[]): Promise<void> {
  for (const attempt of attempts) {
    const error = (await attempt.catch((caught: unknown) => caught)) as { code: string; status: number; message: string };
    expect(error).toMatchObject({ code: 'ledger_unavailable', status: 503 });
    expect(error.message).toContain('PostgreSQL');
    expect(error.message).not.toContain('hunter2');
  }
}

it('every key and tenant operation is a 503 ledger_unavailable that names PostgreSQL and no secret', async () => {
  const keys = openKeyStore({ kind: 'postgres', pool });
  await expectUnavailable([
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
  ]);
});

it('every dashboard token operation is a 503 ledger_unavailable that names PostgreSQL and no secret', async () => {
  const tokens = openDashboardTokens({ kind: 'postgres', pool });
  await expectUnavailable([
    tokens.activeViewer({ tokenId: 'dtk_abcdefgh1234' }, NOW),
    tokens.activeViewer({ secret: `tgd-${'b'.repeat(43)}` }, NOW),
    tokens.create({ tenant: 'acme' }, NOW),
    tokens.list({}, NOW),
    tokens.revoke('dtk_abcdefgh1234', NOW),
  ]);
});

it('reading and saving reconciliation results is a 503 ledger_unavailable that names PostgreSQL', async () => {
  const results = openReconciliations({ kind: 'postgres', pool });
  const report = { provider: 'openai', since: '2026-11-12', until: '2026-11-18', generatedAt: NOW, differences: 0, priceFlags: [] };
  await expectUnavailable([results.latest(), results.latest('openai'), results.latestPerProvider(), results.save(report)]);
});
