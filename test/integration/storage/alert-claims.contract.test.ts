/**
 * The alert claims' contract (src/storage/alert-claims.ts), over the SQLite
 * file and PostgreSQL: an alert's id is claimed once, by the first caller,
 * until its claim is pruned after it expired.
 */
import { expect, it } from 'vitest';
import { openAlertClaims } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');

describeBackends('alert claims', (fixture) => {
  it('gives each id to its first claimant only', async () => {
    const backend = await fixture.fresh();
    const claims = openAlertClaims(backend);
    // Two processes sharing the store.
    const other = openAlertClaims(backend);
    expect(claims.kind).toBe(fixture.name);
    expect(await claims.claim('budget:key_1:80', NOW, NOW + 60_000)).toBe(true);
    expect(await other.claim('budget:key_1:80', NOW + 1, NOW + 60_000)).toBe(false);
    expect(await claims.claim('budget:key_1:80', NOW + 2, NOW + 60_000)).toBe(false);
    expect(await other.claim('budget:key_1:90', NOW + 3, NOW + 60_000)).toBe(true);
  });

  it('forgets claims once pruned after they expire, and only those', async () => {
    const backend = await fixture.fresh();
    const claims = openAlertClaims(backend);
    await claims.claim('old', NOW, NOW + 1_000);
    await claims.claim('new', NOW, NOW + 60_000);
    await claims.prune(NOW + 500);
    expect(await claims.claim('old', NOW + 600, NOW + 2_000)).toBe(false);
    await claims.prune(NOW + 1_001);
    expect(await claims.claim('old', NOW + 1_002, NOW + 2_000)).toBe(true);
    expect(await claims.claim('new', NOW + 1_002, NOW + 2_000)).toBe(false);
  });

  it('prefers the claims the hosts share on one host, and PostgreSQL on a replica', async () => {
    const backend = await fixture.fresh();
    const shared = { kind: 'redis', claim: async () => true, prune: async () => undefined };
    expect(openAlertClaims(backend, { shared }).kind).toBe(fixture.name === 'postgres' ? 'postgres' : 'redis');
  });
});
