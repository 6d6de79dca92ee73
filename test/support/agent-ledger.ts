/**
 * Tollgate's ledger held against the fake upstream's books for the requests an agent CLI made:
 * a CLI sends what it likes (one call, or a few with a small model on the side), so rows and
 * bills are compared as sets, each row's cost equal to one request's bill.
 */
import { openDatabase } from '../../src/storage/sqlite/open.js';
import { builtinPriceTable, costMicroUsd, resolvePrice } from '../../src/estimate/index.js';
import type { RecordedRequest } from '../../src/demo/fake-upstream/index.js';
import { cli } from './cli.js';
import { waitFor } from './wait.js';

export interface AgentRow {
  readonly request_id: string;
  readonly endpoint: string;
  readonly model: string;
  readonly status: string;
  readonly http_status: number | null;
  readonly cost_micros: number;
  readonly est_cost_micros: number;
  /** The agent session the row belongs to: the ledger's `session` column (agent sessions, docs/agents.md). */
  readonly session?: string | null;
}

/** Every ledger row of the key named `name`, oldest first. */
export function rowsOfKey(dbPath: string, name: string): AgentRow[] {
  const database = openDatabase(dbPath);
  try {
    return database.sqlite
      .prepare('SELECT l.* FROM ledger l JOIN api_keys k ON k.id = l.key_id WHERE k.name = ? ORDER BY l.created_at, l.request_id')
      .all(name) as AgentRow[];
  } finally {
    database.close();
  }
}

/** The key's rows once there are `count` and none is pending (the ledger is written after the answer). */
export async function settledRowsOfKey(dbPath: string, name: string, count: number): Promise<AgentRow[]> {
  await waitFor(
    () => {
      const rows = rowsOfKey(dbPath, name);
      return rows.length >= count && rows.every((row) => row.status !== 'pending');
    },
    `${count} settled ledger rows of key ${name}`,
    15_000,
  );
  return rowsOfKey(dbPath, name);
}

/** What the fake billed for a request, priced from the built-in table as the ledger prices it. */
export function billOf(record: RecordedRequest): number {
  const model = (record.body as { model?: unknown }).model;
  return costMicroUsd(record.billed, resolvePrice(typeof model === 'string' ? model : '', builtinPriceTable));
}

/** Costs in ascending order, to compare a run's rows with its bills as sets. */
export function ascending(costs: readonly number[]): number[] {
  return [...costs].sort((a, b) => a - b);
}

/** Issues a key the way an operator does (`tollgate keys create … --json`) and returns its secret. */
export async function createKey(dbPath: string, name: string, ...options: string[]): Promise<string> {
  const created = await cli('--db', dbPath, 'keys', 'create', '--name', name, ...options, '--json');
  if (created.code !== 0) throw new Error(`keys create ${name} failed: ${created.stderr}`);
  return created.json<{ key: string }>().key;
}

/**
 * What Tollgate reserves for one of the agent's calls on a key with a budget: the call's body
 * (as the fake upstream received it) sent again on a key whose budget cannot pay for it, and the
 * amount read from Tollgate's refusal ("This request could cost up to $…").
 */
export async function reservationOfCall(origin: string, record: RecordedRequest, brokeKey: string): Promise<number> {
  const response = await fetch(`${origin}${record.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${brokeKey}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: record.rawBody ?? JSON.stringify(record.body),
  });
  const text = await response.text();
  const amount = /could cost up to \$(\d+)\.(\d+)/.exec(text);
  if (response.status !== 429 || amount === null) throw new Error(`expected a budget refusal, got ${response.status}: ${text}`);
  return Number(amount[1]) * 1_000_000 + Number(amount[2]!.padEnd(6, '0'));
}
