/** Reading a request's agent session: which header wins, what is refused, what is recorded as a digest (pure). */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_SESSION_CHARS, readSession, refusedRequestSession } from '../../../src/endusers/session.js';
import { sessionPolicyFrom } from '../../../src/domain/policy-options.js';
import { PolicyError, validatePolicy } from '../../../src/domain/policy.js';
import { readAttribution } from '../../../src/endusers/attribution.js';
import { TollgateError } from '../../../src/domain/errors.js';

function refusal(run: () => unknown): TollgateError {
  try {
    run();
  } catch (error) {
    if (error instanceof TollgateError) return error;
    throw error;
  }
  throw new Error('not refused');
}

const CLAUDE = 'f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
const CODEX = '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

describe('readSession', () => {
  it('takes x-tollgate-session over the agents’ headers, Claude Code’s over Codex’s, and session-id over thread-id', () => {
    const all = { 'x-tollgate-session': 'mine', 'x-claude-code-session-id': CLAUDE, 'session-id': CODEX, 'thread-id': 'thread-1' };
    expect(readSession(all)).toBe('mine');
    expect(readSession({ 'x-claude-code-session-id': CLAUDE, 'session-id': CODEX })).toBe(CLAUDE);
    expect(readSession({ 'session-id': CODEX, 'thread-id': 'thread-1', originator: 'codex_exec' })).toBe(CODEX);
    expect(readSession({ session_id: CODEX })).toBe(CODEX);
    expect(readSession({ 'thread-id': 'thread-1', originator: 'codex_exec' })).toBe('thread-1');
    expect(readSession({ originator: 'codex_exec' })).toBeUndefined();
    expect(readSession({})).toBeUndefined();
    expect(readSession({ 'session-id': '  ', 'thread-id': 'thread-1' })).toBe('thread-1');
  });

  it('refuses a bad x-tollgate-session with a 400 naming the header', () => {
    for (const bad of ['', 'has space', '-leading', 'a|b', '{tag}', 'x'.repeat(MAX_SESSION_CHARS + 1)]) {
      const error = refusal(() => readSession({ 'x-tollgate-session': bad }));
      expect(error.status).toBe(400);
      expect(error.param).toBe('x-tollgate-session');
      expect(error.message).toContain('x-tollgate-session');
    }
    expect(refusal(() => readSession({ 'x-tollgate-session': ['a', 'b'] })).param).toBe('x-tollgate-session');
    expect(readSession({ 'x-tollgate-session': 'x'.repeat(MAX_SESSION_CHARS) })).toHaveLength(MAX_SESSION_CHARS);
  });

  it('records an agent’s header outside the alphabet or length as a stable digest, never refusing it', () => {
    const odd = 'a session with spaces';
    const digest = readSession({ 'x-claude-code-session-id': odd });
    expect(digest).toMatch(/^sha256:[0-9a-f]{32}$/);
    expect(readSession({ 'session-id': odd })).toBe(digest);
    expect(readSession({ 'session-id': 'another one' })).not.toBe(digest);
    expect(readSession({ 'x-claude-code-session-id': 'y'.repeat(500) })).toMatch(/^sha256:/);
  });

  it('accepts exactly the sessions of the documented alphabet and length, and digests every other agent id (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$/), (id) => {
        expect(readSession({ 'x-tollgate-session': id })).toBe(id);
        expect(readSession({ 'x-claude-code-session-id': id })).toBe(id);
      }),
    );
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 300 }), (id) => {
        const recorded = readSession({ 'session-id': id });
        if (recorded === undefined) expect(id.trim()).toBe('');
        else expect(recorded.length).toBeLessThanOrEqual(MAX_SESSION_CHARS);
      }),
    );
  });

  it('is part of the request’s attribution, alongside its end user', () => {
    expect(readAttribution({ user: 'ann' }, { 'x-claude-code-session-id': CLAUDE })).toEqual({ endUser: 'ann', tags: [], session: CLAUDE });
    expect(readAttribution({}, {}).session).toBeUndefined();
  });
});

describe('refusedRequestSession', () => {
  it('names the session of a request refused before its body was read, and none for a bad x-tollgate-session', () => {
    expect(refusedRequestSession({ 'x-claude-code-session-id': CLAUDE })).toBe(CLAUDE);
    expect(refusedRequestSession({ 'x-tollgate-session': 'not ok' })).toBeUndefined();
  });
});

describe('sessionPolicyFrom', () => {
  it('reads --session-limit and --session-budget-usd, a whole-run (total) budget unless a period is given', () => {
    expect(sessionPolicyFrom({ sessionBudgetUsd: '5' })).toEqual({ limits: [], budgets: [{ microUsd: 5_000_000, period: 'total' }] });
    expect(sessionPolicyFrom({ sessionBudgetUsd: '0.25', sessionBudgetPeriod: 'day', sessionLimit: ['requests:60/min', 'usd:1/h'] })).toEqual({
      limits: [
        { name: 'requests-per-min', unit: 'requests', amount: 60, period: 'min', burst: 60 },
        { name: 'usd-per-h', unit: 'usd', amount: 1_000_000, period: 'h', burst: 1_000_000 },
      ],
      budgets: [{ microUsd: 250_000, period: 'day' }],
    });
    expect(sessionPolicyFrom({})).toBeUndefined();
  });

  it('keeps what an update does not name, and clears it all with --no-session-policy', () => {
    const current = {
      limits: [{ name: 'rpm', unit: 'requests' as const, amount: 10, period: 'min' as const, burst: 10 }],
      budgets: [{ microUsd: 5, period: 'total' as const }],
    };
    expect(sessionPolicyFrom({ sessionBudgetPeriod: 'week' }, current)).toEqual({ limits: current.limits, budgets: [{ microUsd: 5, period: 'week' }] });
    expect(sessionPolicyFrom({ sessionBudgetUsd: '2' }, current)).toEqual({ limits: current.limits, budgets: [{ microUsd: 2_000_000, period: 'total' }] });
    expect(sessionPolicyFrom({ sessionPolicy: false }, current)).toBeNull();
    expect(() => sessionPolicyFrom({ sessionPolicy: false, sessionBudgetUsd: '1' })).toThrow(/--no-session-policy/);
  });

  it('refuses bad amounts, periods and limits with the option’s name', () => {
    expect(() => sessionPolicyFrom({ sessionBudgetUsd: '0' })).toThrow(/--session-budget-usd must be greater than zero/);
    expect(() => sessionPolicyFrom({ sessionBudgetUsd: '1', sessionBudgetPeriod: 'year' })).toThrow(/--session-budget-period/);
    expect(() => sessionPolicyFrom({ sessionBudgetPeriod: 'day' })).toThrow(/needs --session-budget-usd/);
    expect(() => sessionPolicyFrom({ sessionLimit: ['requests:0/min'] })).toThrow(PolicyError);
  });

  it('is validated with the rest of the policy: two session limits of one name or two budgets of one period are refused', () => {
    const limit = { name: 'rpm', unit: 'requests' as const, amount: 10, period: 'min' as const, burst: 10 };
    expect(() => validatePolicy({ limits: [], session: { limits: [limit, limit] } })).toThrow(/two session limits are named "rpm"/);
    expect(() =>
      validatePolicy({
        limits: [],
        session: {
          limits: [],
          budgets: [
            { microUsd: 1, period: 'day' },
            { microUsd: 2, period: 'day' },
          ],
        },
      }),
    ).toThrow(/two session budgets per day/);
    expect(() => validatePolicy({ limits: [], session: { limits: [limit], budgets: [{ microUsd: 1, period: 'total' }] } })).not.toThrow();
  });
});
