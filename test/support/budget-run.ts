/**
 * The budget test of issue "budgets that cannot leak", as a new user tried it:
 * a key with a $0.05/day budget sends o4-mini chat requests without max_tokens
 * — concurrent JSON, concurrent streams, then one by one — to an upstream
 * whose reasoning model thinks 20,000 hidden tokens (within the limit it is
 * sent). Used against one process and against several sharing Redis.
 */
import OpenAI from 'openai';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../src/estimate/index.js';
import type { FakeUpstream } from '../../src/demo/fake-upstream/index.js';
import { openDatabase } from '../../src/storage/sqlite/open.js';

export const BUDGET_MICRO_USD = 50_000;
const SCENARIO = { headers: { 'x-fake-scenario': 'reasoning=20000,words=40' } };
const messages = [{ role: 'user' as const, content: 'Prove that there are infinitely many primes.' }];

export interface BudgetRunResult {
  readonly admitted: number;
  readonly refused: number;
  /** Answers whose output Tollgate capped (x-tollgate-output-capped). */
  readonly capped: number[];
}

/** Twelve requests, spread round-robin over `baseURLs`. */
export async function runBudgetMix(baseURLs: readonly string[], key: string): Promise<BudgetRunResult> {
  const clients = baseURLs.map((baseURL) => new OpenAI({ baseURL, apiKey: key, maxRetries: 0 }));
  let turn = 0;
  const next = () => clients[turn++ % clients.length]!;
  const result = { admitted: 0, refused: 0, capped: [] as number[] };
  const record = (capped: string | null) => {
    result.admitted++;
    if (capped !== null) result.capped.push(Number(capped));
  };
  const refused = (error: unknown) => {
    if (!(error instanceof OpenAI.APIError) || error.status !== 429 || error.code !== 'insufficient_quota') throw error;
    result.refused++;
  };
  const json = async () => {
    try {
      const { response } = await next().chat.completions.create({ model: 'o4-mini', messages }, SCENARIO).withResponse();
      record(response.headers.get('x-tollgate-output-capped'));
    } catch (error) {
      refused(error);
    }
  };
  const streamed = async () => {
    try {
      const { data: stream, response } = await next().chat.completions.create({ model: 'o4-mini', messages, stream: true }, SCENARIO).withResponse();
      for await (const chunk of stream) void chunk;
      record(response.headers.get('x-tollgate-output-capped'));
    } catch (error) {
      refused(error);
    }
  };
  await Promise.all([json(), json(), json(), json()]);
  await Promise.all([streamed(), streamed(), streamed(), streamed()]);
  for (let i = 0; i < 4; i++) await json();
  return result;
}

/** The fake upstream's own bill for o4-mini, in µUSD. */
export function upstreamBill(fake: FakeUpstream): number {
  const price = resolvePrice('o4-mini', builtinPriceTable);
  return fake.requests.reduce((sum, request) => sum + costMicroUsd(request.billed, price), 0);
}

/** What the ledger files in `paths` recorded (cost of settled rows) and how many rows are still pending. */
export function ledgerTotals(paths: readonly string[]): { cost: number; pending: number; rows: Array<{ request_id: string; cost_micros: number }> } {
  let cost = 0;
  let pending = 0;
  const rows: Array<{ request_id: string; cost_micros: number }> = [];
  for (const path of paths) {
    const database = openDatabase(path);
    try {
      const sqlite = database.sqlite;
      cost += (sqlite.prepare('SELECT coalesce(sum(cost_micros), 0) AS c FROM ledger').get() as { c: number }).c;
      pending += (sqlite.prepare("SELECT count(*) AS n FROM ledger WHERE status = 'pending'").get() as { n: number }).n;
      rows.push(...(sqlite.prepare("SELECT request_id, cost_micros FROM ledger WHERE status NOT IN ('rejected', 'invalid_request')").all() as typeof rows));
    } finally {
      database.close();
    }
  }
  return { cost, pending, rows };
}
