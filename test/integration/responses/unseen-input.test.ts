/**
 * Input Tollgate cannot count holds a budget, end to end: a fake upstream that bills
 * `previous_response_id` history again as input (and files by URL at the size the scenario
 * gives), a key with a $0.05/day budget, and the openai SDK. The budget is never passed, every
 * ledger row is at least what the upstream billed for its request, and what does not fit is
 * refused with `insufficient_quota` before the upstream is asked.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../../src/estimate/index.js';
import { parseLimit } from '../../../src/domain/policy.js';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { scenario, startHarness, UPSTREAM_KEY, type Harness } from './harness.js';

const BUDGET = 50_000;
const MODEL = 'gpt-4o-mini';
const price = resolvePrice(MODEL, builtinPriceTable);

let fake: FakeUpstream;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  h = await startHarness(fake, tempDatabasePath().path);
});
afterAll(async () => {
  await h.close();
  await fake.close();
});

interface Row {
  request_id: string;
  status: string;
  cost_micros: number | null;
  est_prompt_tokens: number;
  error_code: string | null;
}

function rowsOf(keyId: string): Row[] {
  return h.tollgate.database.sqlite
    .prepare('SELECT request_id, status, cost_micros, est_prompt_tokens, error_code FROM ledger WHERE key_id = ? ORDER BY created_at')
    .all(keyId) as Row[];
}

/** What the fake billed for the request Tollgate forwarded as `requestId`, µUSD. */
function upstreamBill(requestId: string): number | undefined {
  const record = fake.requests.find((r: RecordedRequest) => r.headers['x-client-request-id'] === requestId);
  return record === undefined ? undefined : costMicroUsd(record.billed, price);
}

function budgetKey(name: string): { key: string; id: string } {
  const issued = h.tollgate.keyStore.createKey({ name, policy: { limits: [], budgets: [{ microUsd: BUDGET, period: 'day' }] } });
  return { key: issued.key, id: issued.view.id };
}

/** About `tokens` tokens of text (each repeated word is one token in o200k_base). */
function longText(tokens: number): string {
  return ' fox'.repeat(tokens);
}

async function settledRows(keyId: string, count: number): Promise<Row[]> {
  await fake.settled();
  for (let i = 0; i < 200; i++) {
    h.tollgate.ledger.flush();
    const rows = rowsOf(keyId);
    if (rows.length >= count && rows.every((row) => row.status !== 'pending')) return rows;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return rowsOf(keyId);
}

describe('stored history (previous_response_id)', () => {
  it('twenty parallel continuations of one large response stay within a $0.05 budget, each row at least the upstream bill', async () => {
    const { key, id } = budgetKey('continuer');
    const client = h.client(key);
    const first = await client.responses.create({ model: MODEL, input: longText(60_000), max_output_tokens: 64 });
    expect(first.usage!.input_tokens).toBeGreaterThan(59_000);

    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        client.responses.create({ model: MODEL, previous_response_id: first.id, input: 'Continue.', max_output_tokens: 16 }).then(
          () => 'ok' as const,
          (error: unknown) => {
            if (error instanceof OpenAI.APIError && error.status === 429 && error.code === 'insufficient_quota') return 'refused' as const;
            throw error;
          },
        ),
      ),
    );
    const admitted = outcomes.filter((o) => o === 'ok').length;
    // Each continuation bills the ~60k tokens of history again (~$0.009): only a few fit.
    expect(admitted).toBeGreaterThanOrEqual(2);
    expect(outcomes.filter((o) => o === 'refused').length).toBeGreaterThan(10);

    const rows = await settledRows(id, 21);
    const forwarded = rows.filter((row) => row.status === 'ok');
    expect(forwarded).toHaveLength(admitted + 1);
    const spent = forwarded.reduce((sum, row) => sum + row.cost_micros!, 0);
    expect(spent).toBeLessThanOrEqual(BUDGET);
    let billed = 0;
    for (const row of forwarded) {
      const bill = upstreamBill(row.request_id)!;
      expect(row.cost_micros).toBeGreaterThanOrEqual(bill);
      billed += bill;
    }
    expect(billed).toBeLessThanOrEqual(BUDGET);
    // Refused ones never reached the upstream.
    for (const row of rows.filter((r) => r.status === 'rejected')) expect(upstreamBill(row.request_id)).toBeUndefined();
  }, 60_000);

  it('reserves a continuation at the size Tollgate settled the previous response at', async () => {
    const { key, id } = budgetKey('known-history');
    const client = h.client(key);
    const first = await client.responses.create({ model: MODEL, input: longText(2_000), max_output_tokens: 32 });
    await client.responses.create({ model: MODEL, previous_response_id: first.id, input: 'Continue.', max_output_tokens: 16 });
    const rows = await settledRows(id, 2);
    const history = first.usage!.input_tokens + first.usage!.output_tokens;
    // The counted "Continue." message is a few tokens beside the history.
    expect(rows[1]!.est_prompt_tokens).toBeGreaterThanOrEqual(history);
    expect(rows[1]!.est_prompt_tokens).toBeLessThan(history + 20);
  });

  it('reserves a continuation of a response whose usage is not known yet at the window', async () => {
    const { key, id } = budgetKey('unknown-history');
    const client = h.client(key);
    const job = await client.responses.create({ model: MODEL, input: 'A long job.', background: true }, scenario('jobMs=600000'));
    await client.responses.create({ model: MODEL, previous_response_id: job.id, input: 'Continue.', max_output_tokens: 16 });
    // Cancelled, the job settles too (at nothing), so every row of the key can be read settled.
    await client.responses.cancel(job.id);
    const rows = await settledRows(id, 2);
    const continued = rows.find((row) => row.status === 'ok')!;
    expect(continued.est_prompt_tokens).toBe(price.contextWindow);
  });
});

describe('rate limits', () => {
  it('take what is known of unseen input and settle the rest as debt, so a token limit below the window does not refuse it', async () => {
    const key = h.issueKey('tpm', { limits: [parseLimit('tokens:50000/min')] });
    const client = h.client(key);
    const job = await client.responses.create({ model: MODEL, input: 'A long job.', background: true }, scenario('jobMs=600000'));
    // Its size is not known yet: budgets would reserve the 128k window, a 50k-token limit takes the counted prompt.
    const continued = await client.responses.create({ model: MODEL, previous_response_id: job.id, input: 'Continue.', max_output_tokens: 16 });
    expect(continued.status).toBe('completed');
    const input = [{ role: 'user' as const, content: [{ type: 'input_file' as const, file_url: 'https://example.com/report.pdf' }] }];
    expect((await client.responses.create({ model: MODEL, input, max_output_tokens: 16 })).status).toBe('completed');
    await client.responses.cancel(job.id);
  });
});

describe('files named by URL', () => {
  it('reserves a file it cannot read at what the window leaves, so the upstream bill stays under the reservation', async () => {
    const { key, id } = budgetKey('file-reader');
    const input = [{ role: 'user' as const, content: [{ type: 'input_file' as const, file_url: 'https://example.com/report.pdf' }] }];
    await h.client(key).responses.create({ model: MODEL, input, max_output_tokens: 16 }, scenario('fileTokens=100000'));
    const [row] = await settledRows(id, 1);
    expect(row!.est_prompt_tokens).toBe(price.contextWindow);
    expect(row!.cost_micros).toBeGreaterThanOrEqual(upstreamBill(row!.request_id)!);
    expect(upstreamBill(row!.request_id)).toBeGreaterThan(costMicroUsd({ promptTokens: 100_000, completionTokens: 0 }, price) - 1);
  });
});

describe("the operator's bound", () => {
  it('reserves at most TOLLGATE_UNSEEN_INPUT_TOKENS and settles the overshoot as debt from the usage', async () => {
    const bounded = await startHarness(fake, tempDatabasePath().path, { TOLLGATE_UNSEEN_INPUT_TOKENS: '1000' });
    try {
      const key = bounded.issueKey('bounded', { limits: [], budgets: [{ microUsd: BUDGET, period: 'day' }] });
      const input = [{ role: 'user' as const, content: [{ type: 'input_file' as const, file_url: 'https://example.com/report.pdf' }] }];
      const { _request_id: upstreamId } = await bounded
        .client(key)
        .responses.create({ model: MODEL, input, max_output_tokens: 16 }, scenario('fileTokens=20000'));
      expect(upstreamId).toBeDefined();
      await fake.settled();
      const requestId = fake.requests.at(-1)!.headers['x-client-request-id'] as string;
      let row = bounded.ledgerRow(requestId);
      for (let i = 0; i < 100 && row?.status === 'pending'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        row = bounded.ledgerRow(requestId);
      }
      const bill = upstreamBill(requestId)!;
      expect(row!.est_cost_micros).toBeLessThan(bill);
      expect(row!.cost_micros).toBe(bill);
    } finally {
      await bounded.close();
    }
  });
});
