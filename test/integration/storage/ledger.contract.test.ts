/**
 * The ledger's contract over both backends: requests recorded through the
 * node's writer (and, on PostgreSQL, shipped to the shared ledger) leave
 * every rollup equal to the sum of its rows — per key, tenant, end user, tag,
 * hour, day, month and lifetime — while rows are pending, once they settle,
 * and for refusals; names past a key's bound of the day count under
 * `(other)`; and budgets read the spend those rows add up to.
 */
import { expect, it } from 'vitest';
import { describeBackends } from '../../support/backends.js';
import { expectRollupsEqualRows, ledgerUnderTest, readRollups, type LedgerUnderTest } from '../../support/ledger-contract.js';
import { countsOf } from '../../../src/storage/row-counts.js';
import { calendarDay } from '../../../src/domain/calendar.js';
import type { Completion, PendingEntry, Rejection } from '../../../src/storage/ledger.js';

/** A second before the end of November: rows fall on two days and two months. */
const T0 = Date.parse('2026-11-30T23:59:59Z');

function pending(keyId: string, tenantId: string | null, id: string, i: number): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId,
    createdAt: T0 + i * 50,
    endpoint: 'chat',
    model: i % 2 === 0 ? 'gpt-4o-mini' : 'gpt-4o',
    stream: i % 3 === 0,
    estPromptTokens: 100 + i,
    estCompletionTokens: 1000,
    estCostMicros: 615 + i,
    priceKnown: true,
    ...(i % 3 === 0 ? {} : { endUser: `user-${i % 4}` }),
    ...(i % 2 === 0 ? {} : { tags: i % 4 === 1 ? ['search'] : ['search', 'nightly'] }),
  };
}

function completion(id: string, i: number): Completion {
  return {
    requestId: id,
    completedAt: T0 + i * 50 + 10,
    status: i % 5 === 0 ? 'upstream_error' : 'ok',
    httpStatus: i % 5 === 0 ? 500 : 200,
    promptTokens: 90 + i,
    cachedTokens: i % 4,
    completionTokens: 20 + i,
    reasoningTokens: i % 3,
    costMicros: 26 + i * 7,
    usageSource: 'reported',
    latencyMs: 10,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: null,
  };
}

function refusal(keyId: string, tenantId: string | null, i: number): Rejection {
  const code = ['rate_limit_exceeded', 'insufficient_quota', 'invalid_json'][i % 3]!;
  return {
    requestId: `rej-${keyId}-${i}`,
    keyId,
    tenantId,
    createdAt: T0 + i,
    endpoint: 'chat',
    model: 'gpt-4o',
    stream: false,
    status: i % 3 === 2 ? 'invalid_request' : 'rejected',
    httpStatus: i % 3 === 2 ? 400 : 429,
    errorCode: code,
    reason: i % 3 === 0 ? 'rate_limit' : i % 3 === 1 ? 'budget' : 'other',
    estPromptTokens: 0,
    estCompletionTokens: 0,
    estCostMicros: 0,
    endUser: 'user-1',
    tags: ['search'],
  };
}

/** Two keys (one in a tenant), forty requests each: thirty settled, ten left pending, and three refusals. */
async function writeTraffic(ledger: LedgerUnderTest, keys: ReadonlyArray<{ keyId: string; tenantId: string | null }>): Promise<void> {
  for (const { keyId, tenantId } of keys) {
    const ids = Array.from({ length: 40 }, (_, i) => `req-${keyId}-${i}`);
    await Promise.all(ids.map((id, i) => ledger.writer.begin(pending(keyId, tenantId, id, i))));
    // Some pending rows reach the shared ledger before they settle.
    await ledger.settle();
    ids.slice(0, 30).forEach((id, i) => ledger.writer.complete(completion(id, i)));
    for (let i = 0; i < 3; i += 1) ledger.writer.reject(refusal(keyId, tenantId, i));
  }
  await ledger.settle();
}

describeBackends('the ledger', (fixture) => {
  it('keeps every rollup equal to the sum of its rows while they are pending, once they settle, and for refusals', async () => {
    const ledger = ledgerUnderTest(await fixture.fresh());
    const keys = [await ledger.createKey('in-tenant', 'acme'), await ledger.createKey('alone')];
    const { keyId, tenantId } = keys[0]!;
    const ids = Array.from({ length: 12 }, (_, i) => `early-${i}`);
    await Promise.all(ids.map((id, i) => ledger.writer.begin(pending(keyId, tenantId, id, i))));
    await ledger.settle();
    await expectRollupsEqualRows(ledger);
    const whilePending = await readRollups(ledger);
    expect(Object.values(whilePending.rollups_lifetime!)).toEqual([
      expect.objectContaining({ key_id: keyId, requests: 12, cost_micros: ids.reduce((sum, _, i) => sum + 615 + i, 0) }),
    ]);
    ids.forEach((id, i) => ledger.writer.complete(completion(id, i)));
    await writeTraffic(ledger, keys);
    await expectRollupsEqualRows(ledger);

    // Not vacuous: rows over two days, two months, both keys, end users, tags and every kind of refusal.
    const rollups = await readRollups(ledger);
    expect(new Set(Object.values(rollups.rollups_monthly!).map((row) => row.month))).toEqual(new Set(['2026-11', '2026-12']));
    expect(new Set(Object.values(rollups.rollups_tags!).map((row) => row.day))).toEqual(new Set(['2026-11-30', '2026-12-01']));
    expect(new Set(Object.values(rollups.rollups_end_users!).map((row) => row.end_user))).toEqual(new Set(['user-1', 'user-2', 'user-3', 'user-0']));
    const lifetime = Object.values(rollups.rollups_lifetime!);
    expect(lifetime).toHaveLength(2);
    for (const row of lifetime)
      expect(row).toMatchObject({
        requests: row.key_id === keyId ? 52 : 40,
        rejected_rate_limit: 1,
        rejected_budget: 1,
        errors: row.key_id === keyId ? 10 : 7,
      });
    const rows = await ledger.rows();
    expect(rows).toHaveLength(2 * 43 + 12);
    expect(rows.filter((row) => row.status === 'pending')).toHaveLength(20);
  });

  it('counts end users and tags past the key’s bound of the day under (other), and their settlements move the same rows', async () => {
    const ledger = ledgerUnderTest(await fixture.fresh(), { nameBounds: { endUsers: 2, tags: 1 } });
    const { keyId, tenantId } = await ledger.createKey('bounded');
    const entries = Array.from({ length: 6 }, (_, i) => ({
      ...pending(keyId, tenantId, `named-${i}`, 2 * i),
      createdAt: T0 + 10_000 + i,
      endUser: `person-${i}`,
      tags: [`tag-${i}`],
    }));
    for (const entry of entries) await ledger.writer.begin(entry);
    await ledger.settle();
    await expectRollupsEqualRows(ledger);
    entries.forEach((entry, i) => ledger.writer.complete(completion(entry.requestId, i)));
    await ledger.settle();
    await expectRollupsEqualRows(ledger);

    const rollups = await readRollups(ledger);
    const users = Object.values(rollups.rollups_end_users!);
    expect(users.filter((row) => row.end_user !== '(other)')).toHaveLength(2);
    expect(users.find((row) => row.end_user === '(other)')).toMatchObject({ requests: 4 });
    const tags = Object.values(rollups.rollups_tags!);
    expect(tags.filter((row) => row.tag !== '(other)')).toHaveLength(1);
    expect(tags.find((row) => row.tag === '(other)')).toMatchObject({ requests: 5 });
    // Every row keeps its own names; only the rollups fold them.
    expect(new Set((await ledger.rows()).map((row) => row.end_user))).toEqual(new Set(entries.map((entry) => entry.endUser)));
  });

  it('reads the spend of a key, its tenant, an end user and a tag as the sum of their rows', async () => {
    const ledger = ledgerUnderTest(await fixture.fresh());
    const keys = [await ledger.createKey('in-tenant', 'acme'), await ledger.createKey('other-in-tenant', 'acme')];
    await writeTraffic(ledger, keys);
    const rows = await ledger.rows();
    const cost = (filter: (row: (typeof rows)[number]) => boolean, since = '0000-01-01') =>
      rows.filter((row) => filter(row) && calendarDay(Number(row.created_at)) >= since).reduce((sum, row) => sum + countsOf(row).costMicros, 0);
    const tracker = await ledger.spendTracker();
    const now = T0 + 3_600_000;
    const today = calendarDay(now);
    const [first] = keys;
    const key = { level: 'key' as const, id: first!.keyId };
    const tenant = { level: 'tenant' as const, id: first!.tenantId! };
    expect(today).toBe('2026-12-01');
    expect(tracker.spent(key, 'day', now)).toBe(cost((row) => row.key_id === first!.keyId, today));
    expect(tracker.spent(key, 'month', now)).toBe(cost((row) => row.key_id === first!.keyId, '2026-12-01'));
    expect(tracker.spent(key, 'total', now)).toBe(cost((row) => row.key_id === first!.keyId));
    expect(tracker.spent(tenant, 'total', now)).toBe(cost((row) => row.tenant_id === first!.tenantId));
    expect(tracker.spent(tenant, 'day', now)).toBe(cost((row) => row.tenant_id === first!.tenantId, today));
    const user = { level: 'user' as const, id: `${first!.keyId}:user-1`, keyId: first!.keyId, name: 'user-1' };
    expect(tracker.spent(user, 'total', now)).toBe(cost((row) => row.key_id === first!.keyId && row.end_user === 'user-1'));
    const nightly = { level: 'tag' as const, id: `${first!.keyId}:nightly`, keyId: first!.keyId, name: 'nightly' };
    expect(tracker.spent(nightly, 'total', now)).toBe(cost((row) => row.key_id === first!.keyId && (row.tags ?? '').split(',').includes('nightly')));
    // Not vacuous.
    expect(tracker.spent(tenant, 'total', now)).toBeGreaterThan(tracker.spent(key, 'total', now));
    expect(tracker.spent(key, 'day', now)).toBeLessThan(tracker.spent(key, 'total', now));
  });

  it('records every request on the node’s own file first, and on PostgreSQL queues it for the shared ledger until shipped', async () => {
    const backend = await fixture.fresh();
    const ledger = ledgerUnderTest(backend);
    const { keyId, tenantId } = await ledger.createKey('queued');
    await ledger.writer.begin(pending(keyId, tenantId, 'local-first', 1));
    // On the node's disk as soon as `begin` resolves, whatever the backend.
    expect(backend.database.sqlite.prepare("SELECT status FROM ledger WHERE request_id = 'local-first'").all()).toEqual([{ status: 'pending' }]);
    const outbox = backend.database.sqlite.prepare("SELECT 1 FROM sqlite_master WHERE name = 'ledger_outbox'").get();
    if (fixture.name === 'sqlite') expect(outbox).toBeUndefined();
    else expect(backend.database.sqlite.prepare('SELECT request_id, is_new FROM ledger_outbox').all()).toEqual([{ request_id: 'local-first', is_new: 1 }]);
    await ledger.settle();
    expect((await ledger.rows()).map((row) => row.request_id)).toEqual(['local-first']);
    if (fixture.name === 'postgres') expect(backend.database.sqlite.prepare('SELECT count(*) AS n FROM ledger_outbox').get()).toEqual({ n: 0 });
  });
});
