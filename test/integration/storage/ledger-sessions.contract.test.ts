/**
 * Agent sessions in the ledger, over both backends: every row keeps the
 * request's session (pending, settled and refused; on PostgreSQL once
 * shipped), a session's budget reads the spend of exactly its own rows
 * of the key, for each period, and the spend report by session lists each
 * session of each key with its spend, requests and first and last request.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { ledgerUnderTest } from '../../support/ledger-contract.js';
import { countsOf, type LedgerState } from '../../../src/storage/row-counts.js';
import type { Completion, PendingEntry } from '../../../src/storage/ledger.js';
import { openSpendReads } from '../../../src/storage/index.js';
import type { SpendRow } from '../../../src/storage/spend-reads.js';

/** Two days: rows before and after midnight UTC. */
const T0 = Date.parse('2026-11-30T23:59:00Z');

function pending(keyId: string, id: string, i: number, session: string | undefined): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    createdAt: T0 + i * 10_000,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    estPromptTokens: 100,
    estCompletionTokens: 500,
    estCostMicros: 700 + i,
    priceKnown: true,
    ...(session === undefined ? {} : { session }),
  };
}

function completion(id: string, i: number): Completion {
  return {
    requestId: id,
    completedAt: T0 + i * 10_000 + 5,
    status: 'ok',
    httpStatus: 200,
    promptTokens: 90,
    cachedTokens: 0,
    completionTokens: 30 + i,
    reasoningTokens: 0,
    costMicros: 40 + i * 3,
    usageSource: 'reported',
    latencyMs: 5,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: null,
  };
}

type Row = LedgerState & { request_id: string; key_id: string; session: string | null };

describeBackends('agent sessions in the ledger', (fixture) => {
  it('reports spend by session: each key’s sessions with their spend, requests, first and last request, most spent first, in pages', async () => {
    const ledger = ledgerUnderTest(await fixture.fresh());
    const { keyId } = await ledger.createKey('agents');
    const other = await ledger.createKey('other-key');
    const sessions = ['claude-a', 'codex-b', undefined];
    const ids = Array.from({ length: 12 }, (_, i) => `r-${i}`);
    await Promise.all(ids.map((id, i) => ledger.writer.begin(pending(keyId, id, i, sessions[i % 3]))));
    await ledger.writer.begin(pending(other.keyId, 'other-0', 0, 'claude-a'));
    await ledger.settle();
    ids.slice(0, 9).forEach((id, i) => ledger.writer.complete(completion(id, i)));
    await ledger.settle();
    const rows = await ledger.query<Row>(
      `SELECT request_id, key_id, session, status, created_at, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens,
         cached_tokens, completion_tokens, reasoning_tokens, cost_micros, error_code FROM ledger`,
    );
    const reads = openSpendReads(ledger.backend);
    const now = T0 + 3_600_000;
    const report = await reads.spend({ since: '2026-11-30', until: '2026-12-01', by: 'session' }, now);
    const want = (key: string, session: string) => {
      const mine = rows.filter((row) => row.key_id === key && row.session === session);
      const times = mine.map((row) => Number(row.created_at));
      return {
        group: session,
        keyId: key,
        requests: mine.length,
        costMicros: mine.reduce((sum, row) => sum + countsOf(row).costMicros, 0),
        completionTokens: mine.reduce((sum, row) => sum + countsOf(row).completionTokens, 0),
        firstAt: Math.min(...times),
        lastAt: Math.max(...times),
      };
    };
    const got = report.rows.map((row: SpendRow) => ({
      group: row.group,
      keyId: row.keyId,
      requests: Number(row.requests),
      costMicros: Number(row.costMicros),
      completionTokens: Number(row.completionTokens),
      firstAt: Number(row.firstAt),
      lastAt: Number(row.lastAt),
    }));
    const expected = [want(keyId, 'claude-a'), want(keyId, 'codex-b'), want(other.keyId, 'claude-a')].sort((a, b) => b.costMicros - a.costMicros);
    expect(got).toEqual(expected);
    expect(expected[0]!.lastAt - expected[0]!.firstAt).toBeGreaterThan(0);
    // The total is the whole spend of the period (requests without a session too).
    expect(Number(report.total.costMicros)).toBe(rows.reduce((sum, row) => sum + countsOf(row).costMicros, 0));
    // One key's sessions, a page at a time.
    const first = await reads.spend({ since: '2026-11-30', until: '2026-12-01', by: 'session', keyId, limit: 1 }, now);
    expect(first.rows.map((row) => row.group)).toHaveLength(1);
    expect(first.hasMore).toBe(true);
    const second = await reads.spend({ since: '2026-11-30', until: '2026-12-01', by: 'session', keyId, limit: 1, cursor: first.nextCursor! }, now);
    expect([...first.rows, ...second.rows].map((row) => row.group).sort()).toEqual(['claude-a', 'codex-b']);
    expect(second.hasMore).toBe(false);
    // Only the days asked for.
    const today = await reads.spend({ since: '2026-12-01', until: '2026-12-01', by: 'session', keyId }, now);
    for (const row of today.rows) expect(Number(row.firstAt)).toBeGreaterThanOrEqual(Date.parse('2026-12-01T00:00:00Z'));
  });

  it('records the session on pending, settled and refused rows, and reads a session’s spend from its own rows', async () => {
    const ledger = ledgerUnderTest(await fixture.fresh());
    const { keyId } = await ledger.createKey('agents');
    const other = await ledger.createKey('other-key');
    const sessions = ['claude-a', 'codex-b', undefined];
    const ids = Array.from({ length: 18 }, (_, i) => `s-${i}`);
    await Promise.all(ids.map((id, i) => ledger.writer.begin(pending(keyId, id, i, sessions[i % 3]))));
    // The same session name on another key is another session.
    await ledger.writer.begin(pending(other.keyId, 'other-0', 0, 'claude-a'));
    await ledger.settle();
    ids.slice(0, 12).forEach((id, i) => ledger.writer.complete(completion(id, i)));
    ledger.writer.reject({
      requestId: 'refused-0',
      keyId,
      tenantId: null,
      createdAt: T0 + 1,
      endpoint: 'chat',
      model: 'gpt-4o-mini',
      stream: false,
      status: 'rejected',
      httpStatus: 429,
      errorCode: 'insufficient_quota',
      reason: 'budget',
      estPromptTokens: 0,
      estCompletionTokens: 0,
      estCostMicros: 0,
      session: 'codex-b',
    });
    await ledger.settle();

    const rows = await ledger.query<Row>(
      `SELECT request_id, key_id, session, status, created_at, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens,
         cached_tokens, completion_tokens, reasoning_tokens, cost_micros, error_code FROM ledger`,
    );
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    ids.forEach((id, i) => expect(byId.get(id)?.session ?? undefined).toBe(sessions[i % 3]));
    expect(byId.get('refused-0')).toMatchObject({ session: 'codex-b', status: 'rejected' });
    expect(byId.get('s-0')?.status).toBe('ok');
    expect(byId.get('s-15')?.status).toBe('pending');

    const tracker = await ledger.spendTracker();
    const now = T0 + 3_600_000;
    const spentOf = (session: string, key = keyId, since = 0) =>
      rows
        .filter((row) => row.key_id === key && row.session === session && Number(row.created_at) >= since)
        .reduce((sum, row) => sum + countsOf(row).costMicros, 0);
    for (const session of ['claude-a', 'codex-b']) {
      const scope = { level: 'session' as const, id: `${keyId}:${session}`, keyId, name: session };
      expect(tracker.spent(scope, 'total', now)).toBe(spentOf(session));
      expect(tracker.spent(scope, 'day', now)).toBe(spentOf(session, keyId, Date.parse('2026-12-01T00:00:00Z')));
      expect(tracker.spent(scope, 'month', now)).toBe(spentOf(session, keyId, Date.parse('2026-12-01T00:00:00Z')));
    }
    const elsewhere = { level: 'session' as const, id: `${other.keyId}:claude-a`, keyId: other.keyId, name: 'claude-a' };
    expect(tracker.spent(elsewhere, 'total', now)).toBe(700);
    // Not vacuous: both days hold rows of each session, pending and settled ones.
    expect(spentOf('claude-a', keyId, Date.parse('2026-12-01T00:00:00Z'))).toBeLessThan(spentOf('claude-a'));
    expect(spentOf('claude-a', keyId, Date.parse('2026-12-01T00:00:00Z'))).toBeGreaterThan(0);
  });
});
