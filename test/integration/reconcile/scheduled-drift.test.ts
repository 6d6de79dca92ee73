/**
 * Scheduled reconciliation inside the proxy (docs/reconciliation.md,
 * "Scheduled runs" and "Drift"): a whole Tollgate with TOLLGATE_RECONCILE_EVERY,
 * OpenAI's and Anthropic's admin keys set (Anthropic's rejected by the fake),
 * real traffic to a fake upstream whose bill prices gpt-4o at 1.5× the table,
 * and a real webhook receiver. The runs are the timer's, started by hand on a
 * hand-moved clock, a day apart:
 *
 * - day 1, gpt-4o traffic: the drift is found, alerted once (signed, with the
 *   provider, range, both totals, the difference and the tolerance), and
 *   exported per provider in /metrics; Anthropic's failing report is logged
 *   and stops nothing; a second run in the same interval does not run;
 * - day 2 (the range has moved, the drift stays): no second alert;
 * - day 4, only gpt-4o-mini traffic (no deviation): the drift is over, nothing sent;
 * - day 5, gpt-4o again: a new episode, alerted once more.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifySignature } from '../../../src/alerts/signature.js';
import { loadConfig } from '../../../src/config/index.js';
import { Metrics } from '../../../src/metrics.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { createUpstream } from '../../../src/upstreams/pool.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs, type CapturedLogs } from '../../support/logs.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const UPSTREAM_KEY = 'sk-test-upstream-drift-0123456789';
const ADMIN_KEY = 'sk-admin-drift-secret-9876543210';
const WRONG_ANTHROPIC_KEY = 'sk-ant-admin01-not-the-fakes-key-1234';
const HOOK_SECRET = 'whsec-drift-0123456789abcdef';
const DAY_MS = 86_400_000;

let fake: FakeUpstream;
let receiver: WebhookReceiver;
let db: TempDatabase;
let logs: CapturedLogs;
let tollgate: Tollgate;
let key: string;
const clock = { now: Date.parse('2026-11-18T10:00:00Z') };

beforeAll(async () => {
  fake = await startFakeUpstream({
    apiKey: UPSTREAM_KEY,
    now: () => clock.now,
    billing: { adminKey: ADMIN_KEY, project: 'proj_tollgate', deviations: { priceMultipliers: { 'gpt-4o': 1.5 } } },
  });
  receiver = await startWebhookReceiver();
  db = openTempDatabase();
  const configPath = join(db.dir, 'tollgate.json');
  writeFileSync(
    configPath,
    JSON.stringify({ alerts: { webhooks: [{ name: 'ops', url: receiver.url, secretEnv: 'TG_HOOK_SECRET' }], velocity: { enabled: false } } }),
  );
  const config = loadConfig({
    TOLLGATE_DB: db.path,
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_CONFIG: configPath,
    TG_HOOK_SECRET: HOOK_SECRET,
    // The timer's runs fall on UTC midnights, never during the test; the test starts them by hand.
    TOLLGATE_RECONCILE_EVERY: '24h',
    TOLLGATE_RECONCILE_DAYS: '1',
    TOLLGATE_PROVIDER_ADMIN_KEY: ADMIN_KEY,
    TOLLGATE_PROVIDER_API_URL: fake.url,
    TOLLGATE_ANTHROPIC_ADMIN_KEY: WRONG_ANTHROPIC_KEY,
    TOLLGATE_ANTHROPIC_ADMIN_URL: `http://127.0.0.1:${fake.port}`,
  });
  logs = captureLogs('info');
  tollgate = buildTollgate(config, {
    logger: logs.logger,
    database: db.database,
    upstream: createUpstream(config.upstream),
    metrics: new Metrics({ defaultMetrics: false }),
    limitSnapshot: undefined,
    now: () => clock.now,
  });
  await tollgate.start();
  key = tollgate.keyStore.createKey({ name: 'drift-app', policy: { limits: [] } }).key;
}, 60_000);

afterAll(async () => {
  await tollgate?.close();
  await receiver?.close();
  await fake?.close();
  db?.remove();
});

async function chat(model: string): Promise<void> {
  const response = await tollgate.app.request('/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': 'cached=0,words=30' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Something to bill.' }] }),
  });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

async function trafficOn(day: string, model: string): Promise<void> {
  clock.now = Date.parse(`${day}T10:00:00Z`);
  for (let i = 0; i < 3; i += 1) await chat(model);
  await fake.settled();
  await waitFor(() => tollgate.ledger.queueDepth === 0, 'the ledger to commit');
}

/** Drift alerts in the outbox: queued at once by the run that decided them. */
const queuedDriftAlerts = () => tollgate.alerts!.outbox.list(0, 100).filter((row) => row.eventType === 'reconcile.drift');
const deliveredDriftAlerts = () => receiver.deliveries.filter((d) => d.json.type === 'reconcile.drift' && d.status === 200);

async function scrape(): Promise<string> {
  return (await tollgate.app.request('/metrics')).text();
}

function gauge(text: string, name: string, provider: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{provider="${provider}"}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

it('alerts once per drift episode, exports the drift per provider, and a failing provider stops nothing', async () => {
  const reconciler = tollgate.reconciler!;
  expect(reconciler).toBeDefined();
  expect(await scrape()).not.toContain('tollgate_reconcile_drift_usd{');

  // Day 1: the bill prices gpt-4o at 1.5×.
  await trafficOn('2026-11-18', 'gpt-4o');
  const first = await reconciler.runOnce();
  expect(first.ran).toBe(true);
  expect(first.results.map((r) => [r.provider, r.since, r.until, r.drift])).toEqual([
    ['openai', '2026-11-17', '2026-11-18', { exceeded: true, since: clock.now, alerted: true }],
  ]);
  expect(first.failed).toEqual([{ provider: 'anthropic', message: expect.stringContaining('401') as unknown }]);
  expect(logs.lines.some((l) => l.msg === 'scheduled reconciliation failed; will try at the next interval' && l.provider === 'anthropic')).toBe(true);
  expect(JSON.stringify(logs.lines)).not.toContain(WRONG_ANTHROPIC_KEY);
  expect(JSON.stringify(logs.lines)).not.toContain(ADMIN_KEY);
  expect(queuedDriftAlerts()).toHaveLength(1);
  await waitFor(() => deliveredDriftAlerts().length === 1, 'the drift alert');
  const delivery = deliveredDriftAlerts()[0]!;
  expect(verifySignature(HOOK_SECRET, String(delivery.headers['x-tollgate-signature']), delivery.body, Date.now())).toBe(true);
  const totals = first.results[0]!.totals;
  const usd = (micros: number) => (micros / 1e6).toFixed(6);
  expect(delivery.json).toMatchObject({
    type: 'reconcile.drift',
    owner: { level: 'global', id: null },
    reconcile: {
      provider: 'openai',
      since: '2026-11-17',
      until: '2026-11-18',
      ledgerUsd: usd(totals.ledger.costMicros),
      billUsd: usd(totals.provider.costMicros),
      differenceUsd: usd(totals.provider.costMicros - totals.ledger.costMicros),
      tolerancePercent: 1,
      driftSince: '2026-11-18T10:00:00.000Z',
    },
  });
  // 1.5× the table: the bill is a third more than the ledger, give or take the rounding of small line items.
  const percent = (delivery.json.reconcile as { differencePercent: number }).differencePercent;
  expect(percent).toBeGreaterThan(32);
  expect(percent).toBeLessThan(34);

  // /metrics: OpenAI's drift; nothing for Anthropic, whose report was never read.
  const metrics = await scrape();
  const difference = totals.provider.costMicros - totals.ledger.costMicros;
  expect(gauge(metrics, 'tollgate_reconcile_drift_usd', 'openai')).toBe(difference / 1e6);
  expect(gauge(metrics, 'tollgate_reconcile_drift_ratio', 'openai')).toBe(difference / totals.provider.costMicros);
  expect(gauge(metrics, 'tollgate_reconcile_last_success_timestamp_seconds', 'openai')).toBe(clock.now / 1000);
  expect(gauge(metrics, 'tollgate_reconcile_drift_usd', 'anthropic')).toBeUndefined();

  // The same interval again: another node (or this one) has run it.
  expect(await reconciler.runOnce()).toEqual({ ran: false, results: [], failed: [] });

  // Day 2: the range moved, the drift stayed: the same episode, no second alert.
  clock.now += DAY_MS;
  const second = await reconciler.runOnce();
  expect(second.results[0]!.drift).toEqual({ exceeded: true, since: Date.parse('2026-11-18T10:00:00Z'), alerted: true });
  expect(queuedDriftAlerts()).toHaveLength(1);

  // Day 4: only gpt-4o-mini (billed as the table says): within the tolerance, the episode ends, nothing is sent.
  await trafficOn('2026-11-21', 'gpt-4o-mini');
  const third = await reconciler.runOnce();
  expect(third.results[0]!.drift).toEqual({ exceeded: false, since: null, alerted: false });
  expect(third.results[0]!.differences).toBe(0);
  expect(queuedDriftAlerts()).toHaveLength(1);
  // What is left is the ledger's rounding of each request up to the micro-dollar.
  const within = third.results[0]!.totals;
  expect(Math.abs(within.provider.costMicros - within.ledger.costMicros)).toBeLessThanOrEqual(within.ledger.requests);
  expect(gauge(await scrape(), 'tollgate_reconcile_drift_usd', 'openai')).toBe((within.provider.costMicros - within.ledger.costMicros) / 1e6);

  // Day 5: gpt-4o again: a new episode, alerted once more, under its own id.
  await trafficOn('2026-11-22', 'gpt-4o');
  const fourth = await reconciler.runOnce();
  expect(fourth.results[0]!.drift).toEqual({ exceeded: true, since: clock.now, alerted: true });
  await waitFor(() => deliveredDriftAlerts().length === 2, 'the second episode’s alert');
  const [one, two] = deliveredDriftAlerts();
  expect(one!.json.id).not.toBe(two!.json.id);
  expect(two!.json.reconcile).toMatchObject({ since: '2026-11-21', until: '2026-11-22', driftSince: '2026-11-22T10:00:00.000Z' });
  expect(queuedDriftAlerts()).toHaveLength(2);
}, 60_000);
