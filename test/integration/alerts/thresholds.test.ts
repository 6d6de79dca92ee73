/**
 * Budget alerts end to end (README "Alerts"): requests through the proxy
 * spend a key's day budget; a real HTTP receiver gets each threshold once,
 * signed, with the forecast; a new day fires them again; a receiver that
 * fails twice gets the same alert a third time.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifySignature } from '../../../src/alerts/signature.js';
import { HOOK_SECRET, startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { waitFor } from '../../support/wait.js';

let h: AlertsHarness;

beforeAll(async () => {
  h = await startAlertsHarness({ velocity: { enabled: false }, retry: { attempts: 4, initialDelayMs: 50 } });
}, 90_000);
afterAll(async () => {
  await h.close();
});

/** The receiver's deliveries about one key, as parsed bodies. */
function alertsFor(keyName: string) {
  return h.receiver.deliveries.filter((d) => (d.json.owner as { name?: string } | undefined)?.name === keyName && d.status === 200).map((d) => d.json);
}

async function settle(): Promise<void> {
  await h.fake.settled();
  await waitFor(() => h.tollgate.ledger.queueDepth === 0, 'the ledger to commit');
  await h.tollgate.alerts!.monitor.tick();
}

it('sends each threshold once per period, signed, with the forecast, and again after the period resets', async () => {
  // $0.04 a day; each request ≈ 1,000 output tokens of gpt-4o = $0.01 (+ the prompt).
  const key = h.issueKey('burner', { limits: [], budget: { microUsd: 40_000, period: 'day' } });
  for (let i = 0; i < 2; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await settle();
  await waitFor(() => alertsFor('burner').length === 1, 'the 50% alert');
  const first = alertsFor('burner')[0]!;
  expect(first).toMatchObject({
    type: 'budget.threshold',
    owner: { level: 'key', name: 'burner' },
    budget: { period: 'day', threshold: 50, limitUsd: '0.040000', periodStart: '2026-11-22T00:00:00.000Z', periodEnd: '2026-11-23T00:00:00.000Z' },
  });
  const budget = first.budget as { spentUsd: string; percent: number };
  expect(Number(budget.spentUsd)).toBeGreaterThan(0.02);
  expect(budget.percent).toBeGreaterThanOrEqual(50);
  expect(budget.percent).toBeLessThan(80);
  // At the last 24 h's rate (all of it spent at 10:00, so ≈ $0.02 a day) the other half lasts
  // about 24 h more: past the day's end (the budget resets first).
  const forecast = first.forecast as { runsOutAt: string; beforePeriodEnd: boolean; text: string };
  const spent = Math.round(Number(budget.spentUsd) * 1e6);
  expect(Date.parse(forecast.runsOutAt)).toBe(h.clock + Math.ceil(((40_000 - spent) * 86_400_000) / spent));
  expect(forecast.beforePeriodEnd).toBe(false);
  expect(forecast.text).toContain("today's budget lasts the day");

  // Every delivery verifies with the webhook's secret, by the README's recipe as well.
  for (const delivery of h.receiver.deliveries) {
    const header = String(delivery.headers['x-tollgate-signature']);
    expect(verifySignature(HOOK_SECRET, header, delivery.body, Date.now())).toBe(true);
    const [t, v1] = header.split(',').map((part) => part.split('=')[1]);
    expect(createHmac('sha256', HOOK_SECRET).update(`${t}.${delivery.body}`).digest('hex')).toBe(v1);
    expect(verifySignature('another-secret-0123456789', header, delivery.body, Date.now())).toBe(false);
    expect(verifySignature(HOOK_SECRET, header, delivery.body.replace('burner', 'burnex'), Date.now())).toBe(false);
    expect(delivery.headers['x-tollgate-event-id']).toBe(delivery.json.id);
  }

  // Spending on: 80% once; the request capped to what is left uses it up: 100% once; then the budget refuses.
  expect((await h.chat(key, 1000)).status).toBe(200);
  expect((await h.chat(key, 1000)).status).toBe(200); // capped to what is left
  await settle();
  expect((await h.chat(key, 1000)).status).toBe(429);
  await settle();
  await waitFor(() => alertsFor('burner').length === 3, 'the 80% and 100% alerts');
  expect(alertsFor('burner').map((a) => (a.budget as { threshold: number }).threshold)).toEqual([50, 80, 100]);
  // More spending attempts and checks in the same day send nothing more.
  expect((await h.chat(key, 1000)).status).toBe(429);
  await settle();
  await h.tollgate.alerts!.monitor.tick();
  expect(alertsFor('burner')).toHaveLength(3);

  // The next day is a new period: 50% fires again, for that day.
  h.clock += 24 * 3_600_000;
  for (let i = 0; i < 2; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await settle();
  await waitFor(() => alertsFor('burner').length === 4, "the next day's 50% alert");
  expect(alertsFor('burner')[3]).toMatchObject({ budget: { threshold: 50, periodStart: '2026-11-23T00:00:00.000Z' } });
  expect(new Set(alertsFor('burner').map((a) => a.id)).size).toBe(4);
  // What fired is in the outbox, delivered.
  // (The receiver records a delivery before it answers: the outbox marks it once the answer is in.)
  const rows = () => h.tollgate.alerts!.outbox.list(0, 100).filter((row) => row.body.includes('"burner"'));
  await waitFor(() => rows().every((row) => row.status === 'delivered'), 'the outbox to record the deliveries');
  expect(rows().map((row) => row.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
}, 60_000);

it('retries a delivery the receiver fails (500 twice, then 200), with the same body and a fresh signature', async () => {
  const key = h.issueKey('retried', { limits: [], budget: { microUsd: 100_000, period: 'month' } });
  h.receiver.answerNext(500, 500);
  const before = h.receiver.deliveries.length;
  for (let i = 0; i < 5; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await settle();
  await waitFor(() => h.receiver.deliveries.slice(before).some((d) => d.status === 200), 'the third attempt to succeed', 10_000);
  const attempts = h.receiver.deliveries.slice(before);
  expect(attempts.map((d) => d.status)).toEqual([500, 500, 200]);
  expect(new Set(attempts.map((d) => d.body)).size).toBe(1);
  for (const attempt of attempts) expect(verifySignature(HOOK_SECRET, String(attempt.headers['x-tollgate-signature']), attempt.body, Date.now())).toBe(true);
  // Backoff: 50 ms, then 100 ms at least between the tries.
  expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(45);
  expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(95);
  const rowOf = () => h.tollgate.alerts!.outbox.list(0, 100).find((r) => r.body.includes('"retried"'))!;
  await waitFor(() => rowOf().status === 'delivered', 'the outbox to record the delivery');
  const row = rowOf();
  expect(row).toMatchObject({ status: 'delivered', attempts: 3, lastStatus: 200 });
  expect(h.logs.lines.filter((l) => l.msg === 'alert delivery failed; will retry' && l.eventId === row.eventId)).toHaveLength(2);
}, 90_000);

it('gives up after the configured attempts and marks the delivery failed', async () => {
  const key = h.issueKey('unheard', { limits: [], budget: { microUsd: 100_000, period: 'week' } });
  h.receiver.answerNext(503, 503, 503, 503);
  for (let i = 0; i < 5; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await settle();
  const outbox = h.tollgate.alerts!.outbox;
  await waitFor(() => outbox.list(0, 100).some((r) => r.body.includes('"unheard"') && r.status === 'failed'), 'the delivery to be given up', 10_000);
  const row = outbox.list(0, 100).find((r) => r.body.includes('"unheard"'))!;
  expect(row).toMatchObject({ status: 'failed', attempts: 4, lastStatus: 503, lastError: 'HTTP 503' });
  // No log line carries the webhook's secret.
  expect(h.logs.raw.some((line) => line.includes(HOOK_SECRET))).toBe(false);
}, 90_000);
