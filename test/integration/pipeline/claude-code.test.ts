/**
 * The real Claude Code CLI (`claude -p`, the npm package's native binary) through Tollgate
 * against the fake upstream, set up as docs/agents.md says: it prints the upstream's answer,
 * every ledger row is the upstream's bill, its session id is on its rows, a session budget stops
 * a runaway session and leaves the others alone, and a refusal shows Tollgate's own message.
 * The fake answers with text only, so the agent runs no tools. One CLI start per run; the file
 * skips, saying why, where the binary cannot run.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { agentHome, claudeEnv, findClaudeCode, runAgent, type AgentHome, type AgentRun } from '../../support/agents.js';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { ascending, billOf, createKey, reservationOfCall, rowsOfKey, settledRowsOfKey, type AgentRow } from '../../support/agent-ledger.js';

const claude = findClaudeCode();
if (!claude.ok) console.warn(`Claude Code tests skipped: ${claude.why}`);

/** A model on the built-in price table, named so the test does not depend on the CLI's default. */
const MODEL = 'claude-sonnet-4-6';
/** A test starts a CLI once or twice: generous, as a cold start on a loaded machine has taken 15 s. */
const CLI_RUNS_TIMEOUT = 180_000;
/** The runaway starts it up to nine times. */
const RUNAWAY_TIMEOUT = 600_000;
const ANSWER = 'The quick brown fox jumps over lazy dog and then runs far';

let proxy: TestProxy;
let home: AgentHome;

/** The first run's rows: what one call of this CLI reserves and costs, for sizing a session budget. */
let firstRows: AgentRow[] = [];
/** The first run's call as the upstream saw it, and what Tollgate reserves for it on a key with a budget: for sizing a session budget. */
let firstRecord: RecordedRequest | undefined;
let cappedReservation = 0;
let firstSession = '';

const shown = (run: AgentRun): string => `exit ${String(run.code)}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;

describe.skipIf(!claude.ok)(`Claude Code ${claude.ok ? claude.version : `(skipped: ${claude.why})`} through Tollgate`, { timeout: CLI_RUNS_TIMEOUT }, () => {
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

  const run = (key: string, ...args: string[]): Promise<AgentRun> =>
    runAgent(claude, ['-p', '--model', MODEL, ...args], claudeEnv(home, proxy.anthropicBaseURL, key), home.work);

  it('prints the upstream answer, exits 0, and every ledger row is what the upstream billed', async () => {
    const key = await createKey(proxy.dbPath, 'claude-plain');
    const before = proxy.fake.requests.length;
    firstSession = randomUUID();
    const result = await run(key, '--session-id', firstSession, 'Say hello.');
    expect(result.code, shown(result)).toBe(0);
    expect(result.stdout).toContain(ANSWER);

    const records = proxy.fake.requests.slice(before);
    expect(records.length).toBeGreaterThan(0);
    // The agent's own session header reaches the upstream unchanged.
    for (const record of records) expect(record.headers['x-claude-code-session-id']).toBe(firstSession);
    await proxy.fake.settled();
    firstRecord = records[0];
    firstRows = await settledRowsOfKey(proxy.dbPath, 'claude-plain', records.length);
    expect(firstRows.map((row) => row.status)).toEqual(records.map(() => 'ok'));
    expect(ascending(firstRows.map((row) => row.cost_micros))).toEqual(ascending(records.map(billOf)));
  });

  it('shows Tollgate’s own message when a key’s budget cannot pay for the call', async () => {
    const key = await createKey(proxy.dbPath, 'claude-broke', '--budget-usd', '0.01');
    const before = proxy.fake.requests.length;
    const result = await run(key, 'Say hello.');
    expect(result.code, shown(result)).not.toBe(0);
    // Claude Code prints the error's message as Tollgate wrote it (src/budgets): the amount and the key's budget.
    expect(result.stdout + result.stderr).toMatch(/more than the whole monthly budget of key claude-broke \(\$0\.01\)/);
    expect(proxy.fake.requests.length).toBe(before);
    // Refused before the upstream: the ledger keeps the refusal, at no cost.
    expect(rowsOfKey(proxy.dbPath, 'claude-broke').map((row) => [row.status, row.cost_micros])).toEqual([['rejected', 0]]);
    cappedReservation = await reservationOfCall(proxy.server.url, firstRecord!, key);
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
    const key = await createKey(proxy.dbPath, 'claude-sessions', '--session-budget-usd', (budgetMicros / 1e6).toFixed(6));
    const a = randomUUID();
    const b = randomUUID();

    expect((await run(key, '--session-id', a, 'Say hello.')).code).toBe(0);
    // Session B loops: a fresh start, then resumed until Tollgate refuses it.
    let refused: AgentRun | undefined;
    expect((await run(key, '--session-id', b, 'Say hello.')).code).toBe(0);
    for (let turn = 0; turn < 5 && refused === undefined; turn += 1) {
      const next = await run(key, '--resume', b, 'Again.');
      if (next.code !== 0) refused = next;
    }
    expect(refused, 'session B was never refused').toBeDefined();
    expect(refused!.stdout + refused!.stderr).toMatch(/budget/i);

    // Session A is untouched: it resumes and is answered.
    const again = await run(key, '--resume', a, 'Again.');
    expect(again.code, shown(again)).toBe(0);
    expect(again.stdout).toContain(ANSWER);

    const rows = rowsOfKey(proxy.dbPath, 'claude-sessions');
    expect(rows.filter((row) => row.session === a).map((row) => row.status)).toEqual(['ok', 'ok']);
    expect(rows.filter((row) => row.session === b).map((row) => row.status)).toContain('rejected');
    expect(rows.every((row) => row.session === a || row.session === b)).toBe(true);
  });
});
