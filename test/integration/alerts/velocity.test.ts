/**
 * Spend-velocity alerts (README "Alerts"): an hour that spends more than
 * k × the trailing hourly average — a runaway agent loop — sends one
 * `spend.velocity` alert for that hour, for the key and for its tenant; a
 * steady rate sends none.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { waitFor } from '../../support/wait.js';

const HOUR = 3_600_000;
let h: AlertsHarness;

beforeAll(async () => {
  // k = 3 over the 6 hours before, from $0.01 in the hour.
  h = await startAlertsHarness({ velocity: { factor: 3, trailingHours: 6, minimumUsd: 0.01 } });
}, 90_000);
afterAll(async () => {
  await h.close();
});

async function spendAt(at: number, key: string, requests: number): Promise<void> {
  h.clock = at;
  for (let i = 0; i < requests; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => h.tollgate.ledger.queueDepth === 0, 'the ledger to commit');
  await h.tollgate.alerts!.monitor.tick();
}

const velocityAlerts = () => h.receiver.deliveries.filter((d) => d.json.type === 'spend.velocity').map((d) => d.json);
// By the hour they are about, not by when they arrive: delivery is asynchronous, so an alert of a
// warm-up hour may reach the receiver after the runaway hour's spend. One per id, as docs/alerts.md
// tells a receiver: the test's clock jumps minutes at a time, so a delivery the receiver has got but
// the outbox has not yet marked can see its claim lapse and be sent again, with the same id.
const hourSixAlerts = () => {
  const byId = new Map(velocityAlerts().map((a) => [a.id as string, a]));
  return [...byId.values()].filter((a) => (a.velocity as { hourStart: string }).hourStart >= '2026-11-22T06');
};

it('alerts once for an hour over k × the trailing average, for the key and its tenant, and not for a steady rate', async () => {
  const start = Date.parse('2026-11-22T00:00:00Z');
  const steady = h.issueKey('steady', { limits: [] });
  const loop = h.issueKey('loop', { limits: [] }, 'agents');
  // Both spend about $0.01 an hour for six hours (the first hours, with less history, may count as jumps).
  for (let hour = 0; hour < 6; hour += 1) {
    await spendAt(start + hour * HOUR + 60_000, steady, 1);
    await spendAt(start + hour * HOUR + 120_000, loop, 1);
  }
  // Hour 7: "steady" keeps its pace; "loop" spends $0.04, four times its average of $0.01.
  await spendAt(start + 6 * HOUR + 60_000, steady, 1);
  await spendAt(start + 6 * HOUR + 120_000, loop, 4);
  await waitFor(() => hourSixAlerts().length >= 2, 'the velocity alerts of the key and its tenant');
  const fresh = hourSixAlerts();
  expect(fresh.map((a) => `${(a.owner as { level: string }).level}:${(a.owner as { name: string }).name}`).sort()).toEqual(['key:loop', 'tenant:agents']);
  const keyAlert = fresh.find((a) => (a.owner as { level: string }).level === 'key')!;
  expect(keyAlert.velocity).toMatchObject({ hourStart: '2026-11-22T06:00:00.000Z', trailingHours: 6, factor: 3 });
  const v = keyAlert.velocity as { lastHourUsd: string; trailingHourlyAverageUsd: string };
  expect(Number(v.lastHourUsd)).toBeGreaterThan(0.04);
  // One request ($0.01 of output and a few prompt tokens) an hour.
  expect(Number(v.trailingHourlyAverageUsd)).toBeGreaterThanOrEqual(0.01);
  expect(Number(v.trailingHourlyAverageUsd)).toBeLessThan(0.0101);

  // More of the loop in the same hour: no second alert for that hour.
  await spendAt(start + 6 * HOUR + 600_000, loop, 2);
  await h.tollgate.alerts!.monitor.tick();
  expect(hourSixAlerts()).toHaveLength(2);
  // Nothing about "steady" once it had its six hours of history.
  expect(hourSixAlerts().filter((a) => (a.owner as { name: string }).name === 'steady')).toEqual([]);
}, 60_000);
