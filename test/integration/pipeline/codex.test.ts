/**
 * The real Codex CLI (`codex exec`, the npm package's native binary) through Tollgate against
 * the fake upstream, with a custom provider on the Responses API as docs/agents.md says: it
 * prints the upstream's answer, every ledger row is the upstream's bill, its session id is on its
 * rows, a session budget stops a runaway session and leaves the others alone, and a refusal
 * reaches the user. The sandbox is read-only and the fake answers with text only, so the agent
 * runs no commands. One CLI start per run; the file skips, saying why, where Codex cannot run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { agentHome, codexEnv, codexSessionOf, findCodex, runAgent, type AgentHome, type AgentRun } from '../../support/agents.js';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { ascending, billOf, createKey, reservationOfCall, rowsOfKey, settledRowsOfKey, type AgentRow } from '../../support/agent-ledger.js';

const codex = findCodex();
if (!codex.ok) console.warn(`Codex tests skipped: ${codex.why}`);

const MODEL = 'gpt-4o';
/** A test starts a CLI once or twice: generous, as a cold start on a loaded machine has taken 15 s. */
const CLI_RUNS_TIMEOUT = 180_000;
/** The runaway starts it up to nine times. */
const RUNAWAY_TIMEOUT = 600_000;
const ANSWER = 'The quick brown fox jumps over lazy dog and then runs far';

let proxy: TestProxy;
let home: AgentHome;

/** The first run's rows and session: what one call of this CLI reserves and costs, for sizing a session budget. */
let firstRows: AgentRow[] = [];
/** The first run's call as the upstream saw it, and what Tollgate reserves for it on a key with a budget: for sizing a session budget. */
let firstRecord: RecordedRequest | undefined;
let cappedReservation = 0;
let firstSession: string | undefined;

const shown = (run: AgentRun): string => `exit ${String(run.code)}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;

describe.skipIf(!codex.ok)(`Codex ${codex.ok ? codex.version : `(skipped: ${codex.why})`} through Tollgate`, { timeout: CLI_RUNS_TIMEOUT }, () => {
  beforeAll(async () => {
    // A budget that cannot pay for a call's whole output refuses it instead of capping it: a runaway
    // session is then refused after a known number of calls.
    proxy = await startTestProxy({ TOLLGATE_MIN_OUTPUT_TOKENS: '1000000' });
    home = agentHome();
  });
  afterAll(async () => {
    await proxy?.close();
    home?.remove();
  });

  /** `codex exec` in a read-only sandbox, outside any git repository; `args` may start with `resume <id>`. */
  const run = (key: string, ...args: string[]): Promise<AgentRun> =>
    runAgent(codex, ['exec', '--skip-git-repo-check', '--sandbox', 'read-only', ...args], codexEnv(home, proxy.baseURL, key, MODEL), home.work);

  it('prints the upstream answer, exits 0, and every ledger row is what the upstream billed', async () => {
    const key = await createKey(proxy.dbPath, 'codex-plain');
    const before = proxy.fake.requests.length;
    const result = await run(key, 'Say hello.');
    expect(result.code, shown(result)).toBe(0);
    expect(result.stdout).toContain(ANSWER);
    firstSession = codexSessionOf(result);
    expect(firstSession, shown(result)).toBeDefined();

    const records = proxy.fake.requests.slice(before);
    expect(records.map((record) => record.path)).toContain('/v1/responses');
    // Codex's own session headers reach the upstream unchanged.
    for (const record of records) expect(record.headers['session-id']).toBe(firstSession);
    await proxy.fake.settled();
    firstRecord = records[0];
    firstRows = await settledRowsOfKey(proxy.dbPath, 'codex-plain', records.length);
    expect(firstRows.map((row) => row.status)).toEqual(records.map(() => 'ok'));
    expect(ascending(firstRows.map((row) => row.cost_micros))).toEqual(ascending(records.map(billOf)));
  });

  it('shows Tollgate’s own message when the key may not use the model', async () => {
    const key = await createKey(proxy.dbPath, 'codex-mini-only', '--models', 'gpt-4o-mini');
    const before = proxy.fake.requests.length;
    const result = await run(key, 'Say hello.');
    expect(result.code, shown(result)).not.toBe(0);
    expect(result.stderr).toContain('This key may not use the model "gpt-4o". Allowed: gpt-4o-mini.');
    expect(proxy.fake.requests.length).toBe(before);
  });

  it('stops at once when the key’s budget cannot pay for the call, with Codex’s own words for a quota refusal', async () => {
    const key = await createKey(proxy.dbPath, 'codex-broke', '--budget-usd', '0.01');
    const before = proxy.fake.requests.length;
    const result = await run(key, 'Say hello.');
    expect(result.code, shown(result)).not.toBe(0);
    // Codex shows no message of a 429: for Tollgate's `insufficient_quota` (a budget) it prints its
    // own quota text, for any other 429 "exceeded retry limit … request id: <Tollgate's id>".
    expect(result.stderr).toContain('Quota exceeded');
    expect(proxy.fake.requests.length).toBe(before);
    expect(rowsOfKey(proxy.dbPath, 'codex-broke').map((row) => [row.status, row.cost_micros])).toEqual([['rejected', 0]]);
    cappedReservation = await reservationOfCall(proxy.server.url, firstRecord!, key);
  });

  it('names Tollgate’s request id when a requests limit refuses it', async () => {
    const key = await createKey(proxy.dbPath, 'codex-one-a-minute', '--rpm', '1');
    expect((await run(key, 'Say hello.')).code).toBe(0);
    const result = await run(key, 'Say hello again.');
    expect(result.code, shown(result)).not.toBe(0);
    const rows = await settledRowsOfKey(proxy.dbPath, 'codex-one-a-minute', 2);
    const refused = rows.filter((row) => row.status === 'rejected');
    expect(refused).toHaveLength(1);
    // The id a user can look up in Tollgate's logs and ledger.
    expect(result.stderr).toContain(`429 Too Many Requests, request id: ${refused[0]!.request_id}`);
  });

  it('records the agent’s session id on its ledger rows', () => {
    expect(firstRows.length).toBeGreaterThan(0);
    for (const row of firstRows) expect(row.session).toBe(firstSession);
  });

  it('a session budget stops a runaway session and leaves the others alone', { timeout: RUNAWAY_TIMEOUT }, async () => {
    expect(firstRows.length).toBe(1);
    expect(cappedReservation).toBeGreaterThan(0);
    // Room for one call's reservation and one and a half calls' cost: a session's second call fits
    // (a resumed prompt is only a few tokens longer), its third does not, as a budget may not cap a
    // call's output below its full bound here (TOLLGATE_MIN_OUTPUT_TOKENS).
    const budgetMicros = cappedReservation + Math.ceil(firstRows[0]!.cost_micros * 1.5);
    const key = await createKey(proxy.dbPath, 'codex-sessions', '--session-budget-usd', (budgetMicros / 1e6).toFixed(6));

    const started = await run(key, 'Say hello.');
    expect(started.code, shown(started)).toBe(0);
    const a = codexSessionOf(started)!;
    // Session B loops: a fresh start, then resumed until Tollgate refuses it.
    const opened = await run(key, 'Say hello.');
    expect(opened.code, shown(opened)).toBe(0);
    const b = codexSessionOf(opened)!;
    expect(b).not.toBe(a);
    let refused: AgentRun | undefined;
    for (let turn = 0; turn < 5 && refused === undefined; turn += 1) {
      const next = await run(key, 'resume', b, 'Again.');
      if (next.code !== 0) refused = next;
    }
    expect(refused, 'session B was never refused').toBeDefined();

    // Session A is untouched: it resumes and is answered.
    const again = await run(key, 'resume', a, 'Again.');
    expect(again.code, shown(again)).toBe(0);
    expect(again.stdout).toContain(ANSWER);

    const rows = rowsOfKey(proxy.dbPath, 'codex-sessions');
    expect(rows.filter((row) => row.session === a).map((row) => row.status)).toEqual(['ok', 'ok']);
    expect(rows.filter((row) => row.session === b).map((row) => row.status)).toContain('rejected');
    expect(rows.every((row) => row.session === a || row.session === b)).toBe(true);
  });
});
