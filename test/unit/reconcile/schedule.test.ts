/**
 * The scheduled run's own guarantees (src/reconcile/schedule.ts), with
 * stand-in providers behind the provider interface and a real SQLite file:
 * runs never overlap, one provider failing stops neither the other nor the
 * schedule, a shutdown aborts the run in flight, and the timer runs on the
 * interval's boundaries by itself.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { ProviderReportError, type ProviderReport, type UsageProvider } from '../../../src/reconcile/provider.js';
import { createReconcileSchedule, type ReconcileScheduleDeps } from '../../../src/reconcile/schedule.js';
import { openAlertClaims, openLedgerCells, openReconciliations } from '../../../src/storage/index.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { captureLogs, type CapturedLogs } from '../../support/logs.js';
import { waitFor } from '../../support/wait.js';

const EMPTY: ProviderReport = { usage: [], costs: [] };
let db: TempDatabase;
let logs: CapturedLogs;

beforeEach(() => {
  db = openTempDatabase();
  logs = captureLogs('info');
});
afterEach(() => db.remove());

/** A provider that counts its calls and answers as `answer` says. */
function provider(name: string, answer: (signal: AbortSignal | undefined) => Promise<ProviderReport>): UsageProvider & { calls: number } {
  const counted = {
    name,
    calls: 0,
    fetchReport: (_range: unknown, options: { signal?: AbortSignal }) => {
      counted.calls += 1;
      return answer(options.signal);
    },
  };
  return counted;
}

function schedule(providers: UsageProvider[], overrides: Partial<ReconcileScheduleDeps> = {}) {
  const backend = { kind: 'sqlite' as const, database: db.database };
  return createReconcileSchedule({
    everyMs: 3_600_000,
    days: 1,
    today: true,
    providers,
    ledger: openLedgerCells(backend),
    results: openReconciliations(backend),
    claims: openAlertClaims(backend),
    alerts: undefined,
    mapping: undefined,
    prices: loadConfig({}).prices,
    tolerancePercent: 1,
    now: () => Date.parse('2026-11-18T10:00:00Z'),
    logger: logs.logger,
    ...overrides,
  });
}

it('joins the run in flight instead of starting another', async () => {
  let release: () => void = () => undefined;
  const slow = provider('openai', () => new Promise((resolve) => (release = () => resolve(EMPTY))));
  const runs = schedule([slow]);
  const [first, second] = [runs.runOnce(), runs.runOnce()];
  await waitFor(() => slow.calls === 1, 'the report to be asked for');
  release();
  expect(await first).toBe(await second);
  expect(slow.calls).toBe(1);
  await runs.close();
});

it('runs the other provider when one report fails, and logs the failure', async () => {
  const failing = provider('openai', () => Promise.reject(new ProviderReportError('HTTP 401: invalid key', 401)));
  const fine = provider('anthropic', () => Promise.resolve(EMPTY));
  const runs = schedule([failing, fine]);
  const run = await runs.runOnce();
  expect(run.failed).toEqual([{ provider: 'openai', message: 'HTTP 401: invalid key' }]);
  expect(run.results.map((r) => r.provider)).toEqual(['anthropic']);
  expect(logs.lines.filter((l) => l.msg === 'scheduled reconciliation failed; will try at the next interval').map((l) => l.provider)).toEqual(['openai']);
  expect((await openReconciliations({ kind: 'sqlite', database: db.database }).latestPerProvider()).map((s) => s.report.provider)).toEqual(['anthropic']);
  await runs.close();
});

it('aborts the run in flight at shutdown', async () => {
  const hanging = provider(
    'openai',
    (signal) => new Promise((_resolve, reject) => signal!.addEventListener('abort', () => reject(new Error('aborted')), { once: true })),
  );
  const runs = schedule([hanging]);
  const run = runs.runOnce();
  await waitFor(() => hanging.calls === 1, 'the report to be asked for');
  await runs.close();
  expect((await run).failed).toEqual([{ provider: 'openai', message: 'aborted' }]);
  expect(logs.lines.some((l) => l.msg === 'scheduled reconciliation stopped at shutdown')).toBe(true);
});

it('runs by itself on the interval’s boundaries once started', async () => {
  const counted = provider('openai', () => Promise.resolve(EMPTY));
  const runs = schedule([counted], { everyMs: 1000, now: Date.now });
  runs.start();
  await waitFor(() => counted.calls >= 1, 'the first scheduled run', 3000);
  await runs.close();
  expect(logs.lines.some((l) => l.msg === 'scheduled reconciliation done' && l.provider === 'openai')).toBe(true);
});
