/**
 * The ledger's side of a reconciliation (src/storage/ledger-cells.ts, mapped
 * to cells by src/reconcile/ledger-cells.ts) over both backends: the same rows
 * give the same cells — pending and zero-token rows, UTC day edges, rows
 * outside the range, every kind of project mapping.
 */
import { expect, it } from 'vitest';
import type { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { readLedgerCells, type ProjectMapping } from '../../../src/reconcile/ledger-cells.js';
import { openLedgerCells } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';
import { recordRequest } from '../../support/dashboard.js';
import { seedBackend } from '../../support/read-seed.js';
import { sameOnBoth } from '../../support/same-on-both.js';

const at = (iso: string) => Date.parse(iso);
const check = sameOnBoth(new Map());

describeBackends('ledger cells', (fixture) => {
  it('sums the same cells on both backends, for every mapping', async () => {
    const backend = await fixture.fresh();
    const keys = { alpha: '', Beta: '', gamma: '', delta: '' };
    const create = (store: KeyStore, name: string, tenant?: string) => store.createKey({ name, tenant, policy: { limits: [] } }).view.id;
    const rows = (): Array<Parameters<typeof recordRequest>[1]> => [
      // Before the range, on its first instant, across a UTC midnight, on its last instant, after it.
      { keyId: keys.alpha, createdAt: at('2026-11-09T23:59:59.999Z'), costMicros: 1 },
      { keyId: keys.alpha, createdAt: at('2026-11-10T00:00:00Z'), costMicros: 1_000, promptTokens: 100, completionTokens: 20 },
      { keyId: keys.alpha, createdAt: at('2026-11-10T12:00:00Z'), costMicros: 2_000, model: 'gpt-4o' },
      { keyId: keys.Beta, createdAt: at('2026-11-10T23:59:59.999Z'), costMicros: 3_000, model: 'gpt-4o' },
      { keyId: keys.Beta, createdAt: at('2026-11-11T00:00:00Z'), costMicros: 4_000 },
      { keyId: keys.gamma, createdAt: at('2026-11-11T08:00:00Z'), costMicros: 5_000, model: 'Gpt-Upper' },
      { keyId: keys.delta, createdAt: at('2026-11-12T10:00:00Z'), costMicros: 6_000, promptTokens: 7, completionTokens: 9 },
      { keyId: keys.delta, createdAt: at('2026-11-12T23:59:59.999Z'), costMicros: 7_000 },
      { keyId: keys.gamma, createdAt: at('2026-11-13T00:00:00Z'), costMicros: 8_000 },
      // Not counted: refused before the provider (no tokens), and still pending (counted apart).
      {
        keyId: keys.gamma,
        createdAt: at('2026-11-11T09:00:00Z'),
        promptTokens: 0,
        completionTokens: 0,
        costMicros: 0,
        status: 'upstream_error',
        httpStatus: 502,
      },
      { keyId: keys.Beta, createdAt: at('2026-11-11T10:00:00Z'), status: 'pending' },
      { keyId: keys.delta, createdAt: at('2026-11-12T11:00:00Z'), status: 'pending' },
      { keyId: keys.delta, createdAt: at('2026-11-14T11:00:00Z'), status: 'pending' },
    ];
    await seedBackend(backend, async ({ store, writer }) => {
      keys.alpha = create(store, 'alpha', 'acme');
      keys.Beta = create(store, 'Beta', 'acme');
      keys.gamma = create(store, 'gamma');
      keys.delta = create(store, 'delta', 'zeta');
      for (const row of rows()) await recordRequest(writer, row);
    });
    const source = openLedgerCells(backend);

    const mappings: Array<ProjectMapping | undefined> = [
      undefined,
      { default: 'proj_main' },
      { keys: { gamma: 'proj_gamma' }, tenants: { acme: 'proj_acme' } },
      { keys: { alpha: 'proj_alpha' }, tenants: { acme: 'proj_acme', zeta: 'proj_zeta' }, default: 'proj_main' },
    ];
    const range = { since: '2026-11-10', until: '2026-11-12' };
    const names = () => ({ [keys.alpha]: 'key:alpha', [keys.Beta]: 'key:Beta', [keys.gamma]: 'key:gamma', [keys.delta]: 'key:delta' });
    for (const mapping of mappings) {
      const read = await readLedgerCells(source, range, mapping);
      // In day, then model order (bytewise), on both.
      const order = read.cells.map((cell) => `${cell.day} ${cell.model}`);
      expect(order).toEqual([...order].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
      // Two keys' cells of one day and model come in key id order, and ids are random: compared in a fixed order.
      const sorted = { ...read, cells: [...read.cells].sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))) };
      check(fixture.name, `cells ${JSON.stringify(mapping)}`, sorted, names());
    }
    // Not two empty answers.
    const mapped = await readLedgerCells(source, range, mappings[3]);
    expect(mapped.pending).toBe(2);
    // Sorted: two keys' cells of one day and model come in key id order, and ids are random.
    expect(mapped.cells.map((cell) => `${cell.day} ${cell.model} ${cell.project} ${cell.requests} ${cell.costMicros}`).sort()).toEqual([
      '2026-11-10 gpt-4o proj_acme 1 3000',
      '2026-11-10 gpt-4o proj_alpha 1 2000',
      '2026-11-10 gpt-4o-mini proj_alpha 1 1000',
      '2026-11-11 Gpt-Upper proj_main 1 5000',
      '2026-11-11 gpt-4o-mini proj_acme 1 4000',
      '2026-11-12 gpt-4o-mini proj_zeta 2 13000',
    ]);
  });
});
