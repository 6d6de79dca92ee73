/**
 * The reconciliation result store's contract (src/storage/reconciliations.ts),
 * over the SQLite file and PostgreSQL — nothing before the first run, the
 * newest result is the one shown, the newest of each provider (the
 * dashboard's panel, /metrics), exactly the last 50 are kept — and on
 * PostgreSQL, 50 still when identity values skip numbers. (Unreachable:
 * postgres-unreachable.test.ts.)
 */
import { beforeEach, expect, it } from 'vitest';
import type { Backend } from '../../../src/storage/backend.js';
import { openReconciliations } from '../../../src/storage/index.js';
import type { ReconciliationReport, ReconciliationStore } from '../../../src/reconcile/store.js';
import { describeBackends } from '../../support/backends.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');

function report(n: number, provider = 'openai'): ReconciliationReport {
  const side = { requests: n, inputTokens: 10 * n, cachedInputTokens: 0, outputTokens: n, costMicros: 1_000 * n };
  return {
    provider,
    since: '2026-11-12',
    until: '2026-11-18',
    generatedAt: NOW + n,
    byProject: false,
    tolerancePercent: 1,
    rows: [],
    differences: n % 3,
    priceFlags: [],
    unattributedCosts: [],
    totals: { ledger: side, provider: side },
    pending: n % 2,
  };
}

/** The `generatedAt` of every stored result, oldest first (the test looks under the interface, at what is kept). */
async function kept(backend: Backend): Promise<number[]> {
  if (backend.kind === 'sqlite') return backend.database.sqlite.prepare('SELECT created_at FROM reconciliations ORDER BY id').pluck().all() as number[];
  return (await backend.pool.query<{ t: number }>('SELECT created_at AS t FROM reconciliations ORDER BY id')).rows.map((row) => row.t);
}

describeBackends('reconciliation store', (fixture) => {
  let backend: Backend;
  let results: ReconciliationStore;
  beforeEach(async () => {
    backend = await fixture.fresh();
    results = openReconciliations(backend);
  });

  it('has nothing before the first run, then the newest result whole', async () => {
    expect(await results.latest()).toBeUndefined();
    const id = await results.save(report(1));
    expect(await results.latest()).toEqual({ id, createdAt: NOW + 1, report: report(1) });
  });

  it('answers the newest result of each provider, whichever ran last', async () => {
    expect(await results.latestPerProvider()).toEqual([]);
    expect(await results.latest('anthropic')).toBeUndefined();
    const first = await results.save(report(1, 'openai'));
    const second = await results.save(report(2, 'anthropic'));
    const third = await results.save(report(3, 'openai'));
    expect(await results.latestPerProvider()).toEqual([
      { id: second, createdAt: NOW + 2, report: report(2, 'anthropic') },
      { id: third, createdAt: NOW + 3, report: report(3, 'openai') },
    ]);
    expect((await results.latest('anthropic'))?.id).toBe(second);
    expect((await results.latest('openai'))?.id).toBe(third);
    expect((await results.latest())?.id).toBe(third);
    expect(first).toBeLessThan(second);
  });

  it('keeps exactly the last 50', async () => {
    for (let n = 1; n <= 53; n += 1) await results.save(report(n));
    expect(await kept(backend)).toEqual(Array.from({ length: 50 }, (_, i) => NOW + 4 + i));
    expect((await results.latest())?.report).toEqual(report(53));
  });

  // PostgreSQL's own way to lose numbers.
  if (fixture.name === 'postgres')
    it('keeps 50 when identity values skip numbers (a rolled-back insert uses one up)', async () => {
      if (backend.kind !== 'postgres') return;
      for (let n = 1; n <= 53; n += 1) await results.save(report(n));
      await backend.pool.query("SELECT setval('reconciliations_id_seq', nextval('reconciliations_id_seq') + 7)");
      await results.save(report(54));
      await backend.pool.query("SELECT setval('reconciliations_id_seq', nextval('reconciliations_id_seq') + 3)");
      await results.save(report(55));
      expect(await kept(backend)).toEqual(Array.from({ length: 50 }, (_, i) => NOW + 6 + i));
    });
});
