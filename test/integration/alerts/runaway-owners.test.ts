/**
 * The runaway stop below a key (docs/alerts.md "Runaway stop"): an agent session or an end user
 * whose spend runs away is paused on its own — its requests get a 429 that says which session and
 * how to lift it — while the key's other sessions and users go on and the key itself is not paused;
 * the pause lifts when the window passes, or on `tollgate keys resume KEY --session S` (CLI) or the
 * admin API. A hand-moved clock; the monitor is ticked by hand.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { cli } from '../../support/cli.js';
import { waitFor } from '../../support/wait.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
let h: AlertsHarness;

beforeAll(async () => {
  // Over two requests' $0.02: the monitor also ticks on its own each second, and a tick between the
  // second and third request of a burst would otherwise pause it at two requests' rate.
  h = await startAlertsHarness({ runaway: { factor: 5, windowMinutes: 5, trailingHours: 6, minimumUsd: 0.025 } });
}, 90_000);
afterAll(async () => {
  await h.close();
});

type Headers = Record<string, string>;
const session = (id: string): Headers => ({ 'x-tollgate-session': id });
const endUser = (id: string): Headers => ({ 'x-tollgate-user': id });

/** `requests` answers of about $0.01 each at `at`, all committed, then one monitor tick. */
async function spendAt(at: number, key: string, requests: number, headers: Headers = {}): Promise<void> {
  h.clock = at;
  for (let i = 0; i < requests; i += 1) expect((await h.chat(key, 1000, headers)).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => h.tollgate.ledger.queueDepth === 0, 'the ledger to commit');
  await h.tollgate.alerts!.monitor.tick();
}

interface Runaway {
  type: string;
  owner: { name: string };
  summary: string;
  runaway?: { action: string; session?: string; endUser?: string };
}
const runawayAlerts = () =>
  h.receiver.deliveries.map((d) => d.json as unknown as Runaway).filter((a) => a.type === 'spend.velocity' && a.runaway !== undefined);

/** One request's status and error, once it answers `wanted` (the key cache takes up to a poll to see a change). */
async function answer(key: string, headers: Headers, wanted: number): Promise<{ status: number; error?: { code: string; message: string } }> {
  let last: { status: number; error?: { code: string; message: string } } | undefined;
  await waitFor(async () => {
    const response = await h.chat(key, 10, headers);
    const body = (await response.json()) as { error?: { code: string; message: string } };
    last = { status: response.status, error: body.error };
    return response.status === wanted;
  }, `a ${wanted}`);
  await h.fake.settled();
  return last!;
}

it("pauses the session that runs away, not the key's other sessions nor the key, and lifts it when its window passes or on resume", async () => {
  const start = Date.parse('2026-11-23T00:00:00Z');
  const agent = h.issueKey('agent', { limits: [] });
  // A usual rate of about $0.01/hour over six hours, in sessions of its own.
  for (let hour = 0; hour < 6; hour += 1) await spendAt(start + hour * HOUR + MINUTE, agent, 1, session(`day-${hour}`));
  expect(runawayAlerts()).toEqual([]);

  // Session "loop" spends $0.03 in a minute (about 36× the key's usual rate); session "steady" spends one cent.
  const loopAt = start + 6 * HOUR + 10 * MINUTE;
  await spendAt(loopAt - MINUTE, agent, 1, session('steady'));
  await spendAt(loopAt, agent, 3, session('loop'));
  const refused = await answer(agent, session('loop'), 429);
  expect(refused.error?.code).toBe('runaway_throttled');
  expect(refused.error?.message).toMatch(
    /^Spending in session "loop" of key "agent" ran at \$0\.3\d+\/hour over the last 5 min, 3\d× the key's usual rate; its requests are paused until the rate falls or an operator runs `tollgate keys resume agent --session "loop"`\.$/,
  );
  // The key's other sessions, and its requests without a session, go on: the key is not paused.
  expect((await h.chat(agent, 10, session('steady'))).status).toBe(200);
  expect((await h.chat(agent, 10)).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => runawayAlerts().length >= 1, 'the runaway alert');
  expect(runawayAlerts()).toMatchObject([{ owner: { name: 'agent' }, runaway: { action: 'throttled', session: 'loop' } }]);
  expect(runawayAlerts()[0]!.summary).toBe(refused.error?.message);
  const shown = await cli('keys', 'show', 'agent', '--db', h.db.path);
  expect(shown.stdout).toMatch(/paused session .*Spending in session "loop"/);
  expect(shown.stdout).not.toMatch(/^paused +[^s]/m);

  // The window passes with nothing spent by the loop: released, and the alert says so.
  h.clock = loopAt + 6 * MINUTE;
  await h.tollgate.alerts!.monitor.tick();
  await answer(agent, session('loop'), 200);
  await waitFor(() => runawayAlerts().length >= 2, 'the release alert');
  expect(runawayAlerts()[1]).toMatchObject({ runaway: { action: 'released', session: 'loop' } });
  expect(runawayAlerts()[1]!.summary).toMatch(/^session "loop" of key "agent" is no longer paused: its spend over the last 5 min fell to/);

  // Running away again, then lifted by an operator with the CLI before the window passes.
  await spendAt(loopAt + 10 * MINUTE, agent, 3, session('loop'));
  expect((await answer(agent, session('loop'), 429)).error?.code).toBe('runaway_throttled');
  const resumed = await cli('keys', 'resume', 'agent', '--session', 'loop', '--db', h.db.path);
  expect(resumed).toMatchObject({ code: 0, stdout: expect.stringContaining('Resumed session "loop" of key "agent"') });
  await answer(agent, session('loop'), 200);
  await h.tollgate.alerts!.monitor.tick();
  await waitFor(() => runawayAlerts().length >= 4, 'the alert of the resume');
  expect(runawayAlerts()[3]).toMatchObject({
    runaway: { action: 'released', session: 'loop' },
    summary: 'session "loop" of key "agent" is no longer paused: an operator resumed it',
  });
  // The spend before the resume is not judged again.
  await h.tollgate.alerts!.monitor.tick();
  expect((await h.chat(agent, 10, session('loop'))).status).toBe(200);
  await h.fake.settled();
  expect(runawayAlerts()).toHaveLength(4);
}, 90_000);

it('pauses an end user that runs away and resumes it through the admin API', async () => {
  const start = Date.parse('2026-11-24T00:00:00Z');
  const app = h.issueKey('app', { limits: [] });
  for (let hour = 0; hour < 6; hour += 1) await spendAt(start + hour * HOUR + MINUTE, app, 1, endUser(`user-${hour}`));
  const loopAt = start + 6 * HOUR + 10 * MINUTE;
  await spendAt(loopAt, app, 3, endUser('mallory'));
  const refused = await answer(app, endUser('mallory'), 429);
  expect(refused.error?.message).toMatch(/^Spending by end user "mallory" of key "app" ran at .* `tollgate keys resume app --end-user "mallory"`\.$/);
  expect((await h.chat(app, 10, endUser('alice'))).status).toBe(200);
  await h.fake.settled();
  await waitFor(() => runawayAlerts().some((a) => a.runaway?.endUser === 'mallory'), 'the runaway alert');

  const both = await h.admin('POST', '/admin/api/keys/app/resume', { session: 'x', endUser: 'mallory' });
  expect(both.status).toBe(400);
  expect(((await both.json()) as { error: { message: string } }).error.message).toMatch(/a session or an end user, not both/);
  const resumed = await h.admin('POST', '/admin/api/keys/app/resume', { endUser: 'mallory' });
  expect(resumed.status).toBe(200);
  expect(((await resumed.json()) as { pauses: Array<{ name: string; reason?: string }> }).pauses).toEqual([
    expect.not.objectContaining({ reason: expect.anything() }),
  ]);
  await answer(app, endUser('mallory'), 200);
}, 90_000);
