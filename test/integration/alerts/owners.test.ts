/**
 * Alerts for every owner of a budget — a tenant's budget shared by its keys,
 * and the global alert budgets over every key — and the outbox's bound: a
 * dead webhook fills at most `maxPending` rows, later alerts are dropped and
 * logged, and requests go on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { waitFor } from '../../support/wait.js';

async function settle(h: AlertsHarness): Promise<void> {
  await h.fake.settled();
  await waitFor(() => h.tollgate.ledger.queueDepth === 0, 'the ledger to commit');
  await h.tollgate.alerts!.monitor.tick();
}

const owners = (h: AlertsHarness) =>
  h.receiver.deliveries.map((d) => {
    const owner = d.json.owner as { level: string; name: string };
    return `${owner.level}:${owner.name}:${(d.json.budget as { threshold: number }).threshold}`;
  });

describe('tenant and global budgets', () => {
  let h: AlertsHarness;
  beforeAll(async () => {
    h = await startAlertsHarness({ velocity: { enabled: false }, thresholds: [50], globalBudgets: [{ usd: 0.08, period: 'day' }] });
  }, 30_000);
  afterAll(async () => {
    await h.close();
  });

  it("alerts on a tenant's budget spent by two of its keys, and on the global budget spent by every key", async () => {
    h.tollgate.keyStore.createTenant('acme', { limits: [], budget: { microUsd: 40_000, period: 'day' } });
    const a = h.issueKey('acme-a', { limits: [] }, 'acme');
    const b = h.issueKey('acme-b', { limits: [] }, 'acme');
    const other = h.issueKey('solo', { limits: [] });
    // $0.01 each: acme reaches 50% of $0.04 with its second key's request; all keys 50% of $0.08 with the fourth request.
    expect((await h.chat(a, 1000)).status).toBe(200);
    await settle(h);
    expect(owners(h)).toEqual([]);
    expect((await h.chat(b, 1000)).status).toBe(200);
    await settle(h);
    await waitFor(() => owners(h).length === 1, "the tenant's alert");
    expect(owners(h)).toEqual(['tenant:acme:50']);
    expect(h.receiver.deliveries[0]!.json.owner).toMatchObject({ level: 'tenant', id: h.tollgate.keyStore.getTenant('acme').id });
    for (let i = 0; i < 2; i += 1) expect((await h.chat(other, 1000)).status).toBe(200);
    await settle(h);
    await waitFor(() => owners(h).length === 2, 'the global alert');
    expect(owners(h)).toEqual(['tenant:acme:50', 'global:global:50']);
    expect(h.receiver.deliveries[1]!.json).toMatchObject({ owner: { level: 'global', id: null }, budget: { limitUsd: '0.080000', period: 'day' } });
  }, 60_000);
});

describe('a dead webhook', () => {
  let h: AlertsHarness;
  beforeAll(async () => {
    h = await startAlertsHarness({ velocity: { enabled: false }, maxPending: 1, retry: { attempts: 50, initialDelayMs: 60_000 } });
  }, 30_000);
  afterAll(async () => {
    await h.close();
  });

  it('fills the outbox up to maxPending; later alerts are dropped and logged, requests go on', async () => {
    h.receiver.answerNext(...Array.from({ length: 10 }, () => 500));
    const key = h.issueKey('dead-end', { limits: [], budget: { microUsd: 40_000, period: 'day' } });
    for (let i = 0; i < 2; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
    await settle(h);
    await waitFor(() => h.receiver.deliveries.length === 1, 'the first try');
    for (let i = 0; i < 2; i += 1) expect((await h.chat(key, 1000)).status).toBe(200);
    await settle(h);
    const rows = h.tollgate.alerts!.outbox.list(0, 10);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'pending', attempts: 1, lastStatus: 500 });
    expect(h.logs.lines.filter((l) => l.msg === 'alert outbox is full: alert dropped').length).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
