/** `tollgate alerts test|list` and the budget forecast in `tollgate spend` (README "Alerts"). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { verifySignature } from '../../../src/alerts/signature.js';
import { HOOK_SECRET, startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { cli } from '../../support/cli.js';
import { waitFor } from '../../support/wait.js';

let h: AlertsHarness;

beforeAll(async () => {
  h = await startAlertsHarness({ velocity: { enabled: false } });
  // The CLI reads the same config file; a second webhook that answers 404.
  const configPath = join(h.db.dir, 'cli.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      alerts: {
        webhooks: [
          { name: 'ops', url: h.receiver.url, secretEnv: 'TG_HOOK_SECRET' },
          { name: 'broken', url: `${h.receiver.url}/missing`, secretEnv: 'TG_HOOK_SECRET' },
        ],
      },
    }),
  );
  vi.stubEnv('TOLLGATE_CONFIG', configPath);
  vi.stubEnv('TG_HOOK_SECRET', HOOK_SECRET);
}, 30_000);
afterAll(async () => {
  vi.unstubAllEnvs();
  await h.close();
});

it('alerts test sends a signed sample to one webhook, or to all and fails when one does not take it', async () => {
  const before = h.receiver.deliveries.length;
  const one = await cli('alerts', 'test', '--webhook', 'ops', '--json');
  expect(one.code).toBe(0);
  expect(one.json()).toMatchObject({ results: [{ webhook: 'ops', delivered: true, status: 200 }] });
  const sample = h.receiver.deliveries[before]!;
  expect(sample.json).toMatchObject({ type: 'test', test: true, owner: { level: 'key' }, budget: { threshold: 80 } });
  expect(verifySignature(HOOK_SECRET, String(sample.headers['x-tollgate-signature']), sample.body, Date.now())).toBe(true);

  const all = await cli('alerts', 'test');
  expect(all.code).toBe(1);
  expect(all.stdout).toContain('ops: delivered (HTTP 200)');
  expect(all.stdout).toContain('broken: not delivered (HTTP 404)');
  const unknown = await cli('alerts', 'test', '--webhook', 'nope');
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('no webhook named "nope" (configured: ops, broken)');
  // The secret is never printed.
  expect(all.stdout + all.stderr + one.stdout).not.toContain(HOOK_SECRET);
});

it('spend --key shows each budget with its burn-rate forecast, and alerts list what fired', async () => {
  h.clock = Date.now();
  const key = h.issueKey('forecasted', { limits: [], budget: { microUsd: 50_000, period: 'total' } });
  for (let i = 0; i < 3; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => h.tollgate.ledger.queueDepth === 0, 'the ledger to commit');
  await h.tollgate.alerts!.monitor.tick();

  const json = await cli('--db', h.db.path, 'spend', '--key', 'forecasted', '--json');
  expect(json.code).toBe(0);
  const [budget] = json.json<{
    budgets: Array<{ level: string; spentMicros: number; forecast: { ratePerDayMicros: number; runsOutAt: number }; text: string }>;
  }>().budgets;
  expect(budget!.level).toBe('key');
  expect(budget!.spentMicros).toBeGreaterThan(30_000);
  // All of it in the rate's window (the last 24 whole hours and this one: 24–25 h), and $0.02 more lasts under a day.
  expect(budget!.forecast.ratePerDayMicros).toBeGreaterThanOrEqual(Math.floor((budget!.spentMicros * 24) / 25));
  expect(budget!.forecast.ratePerDayMicros).toBeLessThanOrEqual(budget!.spentMicros);
  expect(budget!.forecast.runsOutAt).toBeGreaterThan(Date.now());
  expect(budget!.forecast.runsOutAt).toBeLessThan(Date.now() + 86_400_000);
  const text = await cli('--db', h.db.path, 'spend', '--key', 'forecasted');
  expect(text.stdout).toMatch(
    /Budgets\nkey forecasted: \$0\.03\d* of \$0\.05 in total \(6\d\.\d%\); at the last 24 h's rate \(\$0\.0[23]\d*\/day\) runs out \d{4}-\d\d-\d\d \d\d:\d\d UTC/,
  );

  await waitFor(() => h.tollgate.alerts!.outbox.list(0, 10).some((r) => r.body.includes('"forecasted"') && r.status === 'delivered'), 'the 50% alert');
  const list = await cli('--db', h.db.path, 'alerts', 'list', '--json');
  expect(list.code).toBe(0);
  const rows = list.json<Array<{ event: string; webhook: string; status: string; attempts: number; summary: string }>>();
  expect(rows.find((r) => r.summary.includes('forecasted'))).toMatchObject({ event: 'budget.threshold', webhook: 'ops', status: 'delivered', attempts: 1 });
  const table = await cli('--db', h.db.path, 'alerts', 'list');
  expect(table.stdout).toContain('key forecasted reached 50% of its lifetime budget');
});
