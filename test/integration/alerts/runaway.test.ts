/**
 * The runaway stop (docs/alerts.md "Runaway stop"): a key whose spend over the last minutes runs far
 * over its usual rate is paused — its requests get a 429 that says why and how to lift it, another
 * key is untouched, and the velocity alert says so — until its rate falls (the window passes) or an
 * operator runs `tollgate keys resume`; an operator's suspension outlasts the release. A hand-moved
 * clock; the monitor is ticked by hand.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { cli } from '../../support/cli.js';
import { waitFor } from '../../support/wait.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
let h: AlertsHarness;

beforeAll(async () => {
  // Paused over 5 × the usual rate of the 6 hours before, judged over 5 minutes, from $0.02 in the window.
  h = await startAlertsHarness({ runaway: { factor: 5, windowMinutes: 5, trailingHours: 6, minimumUsd: 0.02 } });
}, 90_000);
afterAll(async () => {
  await h.close();
});

/** `requests` answers of about $0.01 each at `at`, all committed, then one monitor tick. */
async function spendAt(at: number, key: string, requests: number): Promise<void> {
  h.clock = at;
  for (let i = 0; i < requests; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => h.tollgate.ledger.queueDepth === 0, 'the ledger to commit');
  await h.tollgate.alerts!.monitor.tick();
}

const runawayAlerts = () =>
  h.receiver.deliveries
    .map((d) => d.json as { type: string; owner: { name: string }; summary: string; runaway?: { action: string; usdPerHour: string } })
    .filter((a) => a.type === 'spend.velocity' && a.runaway !== undefined);

/** The status and error of one request of `key`, once the key cache shows `paused` as wanted. */
async function statusOnce(key: string, wanted: number): Promise<{ status: number; error?: { code: string; message: string }; headers: Headers }> {
  let last: { status: number; error?: { code: string; message: string }; headers: Headers } | undefined;
  await waitFor(async () => {
    const response = await h.chat(key, 10);
    const body = (await response.json()) as { error?: { code: string; message: string } };
    last = { status: response.status, error: body.error, headers: response.headers };
    return response.status === wanted;
  }, `a ${wanted} for the key`);
  await h.fake.settled();
  return last!;
}

it('pauses a runaway key within its window, leaves the others alone, and lets it through once the rate falls or on resume', async () => {
  const start = Date.parse('2026-11-22T00:00:00Z');
  const loop = h.issueKey('loop', { limits: [] });
  const calm = h.issueKey('calm', { limits: [] });
  // Both spend about $0.01 an hour for six hours: a usual rate of $0.01/hour.
  for (let hour = 0; hour < 6; hour += 1) {
    await spendAt(start + hour * HOUR + MINUTE, calm, 1);
    await spendAt(start + hour * HOUR + 2 * MINUTE, loop, 1);
  }
  expect(runawayAlerts()).toEqual([]);

  // The loop: $0.03 in a minute, a rate of about $0.36/hour, 36 × its usual. "calm" keeps its pace.
  const loopAt = start + 6 * HOUR + 10 * MINUTE;
  await spendAt(loopAt - MINUTE, calm, 1);
  await spendAt(loopAt, loop, 3);
  const refused = await statusOnce(loop, 429);
  expect(refused.error?.code).toBe('runaway_throttled');
  expect(refused.error?.message).toMatch(
    /^Spending on key "loop" ran at \$0\.3\d+\/hour over the last 5 min, 3\d× its usual rate; requests are paused until the rate falls or an operator runs `tollgate keys resume loop`\.$/,
  );
  expect(refused.headers.get('x-should-retry')).toBe('false');
  expect(refused.headers.get('retry-after')).toBeNull();
  expect((await h.chat(calm, 10)).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => runawayAlerts().length >= 1, 'the runaway alert');
  expect(runawayAlerts()).toMatchObject([{ owner: { name: 'loop' }, runaway: { action: 'throttled' } }]);
  expect(runawayAlerts()[0]!.summary).toBe(refused.error?.message);

  // Still inside the window: still paused.
  h.clock = loopAt + 2 * MINUTE;
  await h.tollgate.alerts!.monitor.tick();
  expect((await statusOnce(loop, 429)).error?.code).toBe('runaway_throttled');

  // An operator suspends it meanwhile (docs/admins.md): the stop's own release below lifts its pause, not the suspension.
  expect((await cli('keys', 'suspend', 'loop', '--db', h.db.path)).code).toBe(0);

  // The window has passed with nothing spent: released, and the alert says so.
  h.clock = loopAt + 6 * MINUTE;
  await h.tollgate.alerts!.monitor.tick();
  await waitFor(() => runawayAlerts().length >= 2, 'the release alert');
  expect(runawayAlerts()[1]).toMatchObject({ owner: { name: 'loop' }, runaway: { action: 'released' } });
  expect((await statusOnce(loop, 403)).error?.code).toBe('key_suspended');
  expect((await cli('keys', 'show', 'loop', '--db', h.db.path)).stdout).toMatch(/status\s+suspended/);
  expect((await cli('keys', 'unsuspend', 'loop', '--db', h.db.path)).code).toBe(0);
  await statusOnce(loop, 200);

  // Running away again, then lifted by an operator before the window passes.
  await spendAt(loopAt + 10 * MINUTE, loop, 3);
  expect((await statusOnce(loop, 429)).error?.code).toBe('runaway_throttled');
  const shown = await cli('keys', 'show', 'loop', '--db', h.db.path);
  expect(shown.stdout).toMatch(/paused .*Spending on key "loop"/);
  const resumed = await cli('keys', 'resume', 'loop', '--db', h.db.path);
  expect(resumed).toMatchObject({ code: 0, stdout: expect.stringContaining('Resumed key "loop"') });
  await statusOnce(loop, 200);
  // The release alert names the operator; the spend before the resume is not judged again.
  await h.tollgate.alerts!.monitor.tick();
  await waitFor(() => runawayAlerts().length >= 4, 'the alert of the resume');
  expect(runawayAlerts().map((a) => a.runaway!.action)).toEqual(['throttled', 'released', 'throttled', 'released']);
  expect(runawayAlerts()[3]!.summary).toBe('key "loop" is no longer paused: an operator resumed it');
  await h.tollgate.alerts!.monitor.tick();
  expect((await h.chat(loop, 10)).status).toBe(200);
  await h.fake.settled();
}, 60_000);

it("follows a key's own rule: a key set to never pause, or to a higher factor, runs on where the configured rule pauses", async () => {
  const start = Date.parse('2026-11-25T00:00:00Z');
  const off = h.issueKey('never', { limits: [], runaway: { off: true } });
  const lenient = h.issueKey('lenient', { limits: [], runaway: { factor: 100 } });
  const strict = h.issueKey('strict', { limits: [] });
  for (let hour = 0; hour < 6; hour += 1) for (const key of [off, lenient, strict]) await spendAt(start + hour * HOUR + MINUTE, key, 1);
  // Each spends $0.03 in a minute: about 36× its usual rate, over the configured 5×, under 100×.
  const loopAt = start + 6 * HOUR + 10 * MINUTE;
  for (const key of [off, lenient, strict]) await spendAt(loopAt, key, 3);
  expect((await statusOnce(strict, 429)).error?.code).toBe('runaway_throttled');
  for (const key of [off, lenient]) expect((await h.chat(key, 10)).status).toBe(200);
  await h.fake.settled();

  // Set through the CLI like any policy field, and shown by `keys show`.
  expect((await cli('keys', 'update', 'strict', '--no-runaway', '--db', h.db.path)).code).toBe(0);
  const shown = await cli('keys', 'show', 'lenient', '--db', h.db.path);
  expect(shown.stdout).toMatch(/runaway stop +paused when its spend runs over 100× its usual rate/);
  // A key set to never pause is released at the next look.
  await h.tollgate.alerts!.monitor.tick();
  await statusOnce(strict, 200);
}, 60_000);
