/**
 * A model the price table lacks, by default: refused (400 model_not_priced) for a key with a budget
 * or a `usd` limit, whose cap a guessed price could overrun; served at the fallback for the others;
 * TOLLGATE_UNKNOWN_MODELS=fallback serves it to every key, as before.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteKeyStore } from '../../../src/storage/sqlite/keys.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

const messages = [{ role: 'user' as const, content: 'Say hi.' }];
const MISSPELLED = 'gpt-4o-mnii';

function ask(proxy: TestProxy, key: string, model = MISSPELLED) {
  return new OpenAI({ baseURL: proxy.baseURL, apiKey: key, maxRetries: 0 }).chat.completions.create({ model, messages, max_tokens: 20 });
}

function ledgerRows(
  proxy: TestProxy,
  model: string,
): Array<{ status: string; http_status: number; error_code: string | null; cost_micros: number; est_cost_micros: number }> {
  const database = openDatabase(proxy.dbPath);
  try {
    return database.sqlite.prepare('SELECT status, http_status, error_code, cost_micros, est_cost_micros FROM ledger WHERE model = ?').all(model) as never;
  } finally {
    database.close();
  }
}

describe('a model without a price, by default', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy();
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('is refused for a key with a budget: a 400 model_not_priced that says how to price it, never sent, nothing spent', async () => {
    const key = proxy.issueKey('budgeted', { limits: [], budget: { microUsd: 5_000_000, period: 'day' } });
    const error = await ask(proxy, key).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, code: 'model_not_priced', param: 'model', type: 'invalid_request_error' });
    const message = (error as Error).message;
    expect(message).toContain(`"${MISSPELLED}"`);
    expect(message).toContain('prices.models');
    expect(message).toContain('TOLLGATE_UNKNOWN_MODELS=fallback');
    expect(proxy.fake.requests.filter((r) => (r.body as { model: string }).model === MISSPELLED)).toEqual([]);
    await waitFor(() => ledgerRows(proxy, MISSPELLED).length === 1, 'the refusal to be recorded');
    expect(ledgerRows(proxy, MISSPELLED)).toEqual([
      { status: 'rejected', http_status: 400, error_code: 'model_not_priced', cost_micros: 0, est_cost_micros: 0 },
    ]);
    // A priced model still passes for the same key.
    await ask(proxy, key, 'gpt-4o-mini');
  });

  it('is refused for a key with a usd limit', async () => {
    const key = proxy.issueKey('usd-limited', { limits: [{ name: 'usd-per-day', unit: 'usd', amount: 5_000_000, period: 'day', burst: 5_000_000 }] });
    const error = await ask(proxy, key, 'my-llama-70b').catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, code: 'model_not_priced', param: 'model' });
  });

  it('is refused for a key whose tenant has a budget', async () => {
    const database = openDatabase(proxy.dbPath);
    try {
      new SqliteKeyStore(database).createTenant('capped-team', { limits: [], budget: { microUsd: 5_000_000, period: 'month' } });
    } finally {
      database.close();
    }
    const key = proxy.issueKey('team-key', { limits: [] }, 'capped-team');
    const error = await ask(proxy, key, 'my-mistral').catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, code: 'model_not_priced' });
  });

  it('is served, at the fallback price, to a key without a budget or usd limit', async () => {
    const completion = await ask(proxy, proxy.key, 'my-qwen');
    expect(completion.choices[0]?.message.content).toBeTypeOf('string');
  });
});

describe('TOLLGATE_UNKNOWN_MODELS=fallback', () => {
  it('serves a model without a price to a key with a budget, reserved at the highest price', async () => {
    const proxy = await startTestProxy({ TOLLGATE_UNKNOWN_MODELS: 'fallback' });
    try {
      const key = proxy.issueKey('budgeted', { limits: [], budget: { microUsd: 50_000_000, period: 'day' } });
      await ask(proxy, key);
      await waitFor(() => ledgerRows(proxy, MISSPELLED).some((row) => row.status === 'ok'), 'the request to be settled');
      const [row] = ledgerRows(proxy, MISSPELLED);
      expect(row).toMatchObject({ status: 'ok', http_status: 200 });
      expect(row!.est_cost_micros).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
  });
});
