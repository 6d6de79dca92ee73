/**
 * A batch's spend reaches the alerts when the batch is settled, not at the key's next request
 * (docs/batches.md): a settled batch that crosses a budget threshold sends that threshold's alert
 * with no other request of the key.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAlertsHarness, type AlertsHarness } from '../../support/alerts.js';
import { waitFor } from '../../support/wait.js';

let h: AlertsHarness;

beforeAll(async () => {
  h = await startAlertsHarness({ velocity: { enabled: false } });
}, 90_000);
afterAll(async () => {
  await h.close();
});

it('sends the threshold a settled batch crossed, with no other request of the key', async () => {
  const key = h.issueKey('evals', { limits: [], budget: { microUsd: 100_000, period: 'month' } });
  const auth = { authorization: `Bearer ${key}` };
  // Three lines of about 4,000 output tokens of gpt-4o at the batch price ($5 / 1M): about $0.06 of $0.10.
  const lines = [0, 1, 2].map((i) =>
    JSON.stringify({
      custom_id: `q${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4000 },
    }),
  );
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([lines.join('\n')]), 'batch.jsonl');
  const uploaded = await h.tollgate.app.request('/v1/files', { method: 'POST', headers: auth, body: form });
  expect(uploaded.status).toBe(200);
  const file = (await uploaded.json()) as { id: string };
  const created = await h.tollgate.app.request('/v1/batches', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'x-fake-scenario': 'words=4000,batchMs=50' },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
  });
  expect(created.status).toBe(200);
  const batch = (await created.json()) as { id: string };

  const thresholds = () =>
    h.receiver.deliveries
      .map((d) => d.json as { type: string; owner?: { name?: string }; budget?: { threshold: number } })
      .filter((a) => a.type === 'budget.threshold' && a.owner?.name === 'evals');
  await waitFor(async () => {
    await h.tollgate.batches.follower.scan();
    const row = h.tollgate.database.sqlite.prepare('SELECT status FROM ledger WHERE upstream_request_id = ?').get(batch.id) as { status: string } | undefined;
    return row?.status === 'ok';
  }, 'the batch to settle');
  await h.tollgate.alerts!.monitor.tick();
  await waitFor(() => thresholds().length > 0, 'the threshold alert');
  expect(thresholds().map((a) => a.budget?.threshold)).toEqual([50]);
}, 60_000);
