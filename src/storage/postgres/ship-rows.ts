/**
 * One batch of the outbox, shipped to PostgreSQL in one transaction
 * (shipper.ts): rows inserted or settled, the rollups moved by exactly their
 * difference (shipper-rollups.ts), names bounded over every node
 * (name-bound.ts); and the owners of stored responses.
 */
import type { PgPool } from './open.js';
import { calendarDay } from '../../domain/calendar.js';
import type { SpendChange } from '../ledger.js';
import { decodeTags } from '../../domain/rollup-names.js';
import { DEFAULT_NAME_BOUNDS, type NameBounds } from '../../domain/rollup-names.js';
import { planNames } from './name-bound.js';
import { countsDelta, transition, type LedgerState, type RowCounts } from '../row-counts.js';
import { RollupSums } from './shipper-rollups.js';

/** The ledger row as SQLite holds it. */
export interface LocalRow extends LedgerState {
  readonly seq: number;
  readonly request_id: string | null;
  readonly key_id: string;
  readonly tenant_id: string | null;
  readonly completed_at: number | null;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: number;
  readonly http_status: number | null;
  readonly price_known: number;
  readonly usage_source: string | null;
  readonly latency_ms: number | null;
  readonly ttft_ms: number | null;
  readonly upstream_request_id: string | null;
  readonly end_user: string | null;
  /** Comma-joined, as the writer stores them (src/endusers/attribution.ts). */
  readonly tags: string | null;
  /** The agent session (src/endusers/session.ts); shipped as is. */
  readonly session: string | null;
  /** The node's own name-bound decision and exact names (src/domain/rollup-names.ts). */
  readonly rollup_folded: number | null;
  readonly rollup_exact: number | null;
}

type HeldRow = LedgerState & { readonly request_id: string; readonly rollup_folded: number | null };

const STATE_COLUMNS =
  'request_id, status, created_at, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, cost_micros, error_code, rollup_folded';

/** A row as PostgreSQL's `json_populate_recordset(null::ledger, …)` reads it, with PostgreSQL's own name-bound decision. */
function toPgRow(row: LocalRow, folded?: number): Record<string, unknown> {
  const { seq: _seq, stream, price_known, rollup_exact: _exact, ...rest } = row;
  return { ...rest, stream: stream === 1, price_known: price_known === 1, rollup_folded: folded === undefined || folded === 0 ? null : folded };
}

export interface ShipResult {
  /** Outbox entries handled (shipped or found already shipped; response owners included). */
  readonly entries: number;
  /** Rows PostgreSQL did not have. */
  readonly inserted: number;
  /** Rows PostgreSQL held as pending and now holds settled. */
  readonly settled: number;
  /** What the batch added to PostgreSQL's spend (budgets count it until their next read: src/storage/postgres/spend-source.ts). */
  readonly changes: readonly SpendChange[];
}

/**
 * Ships `rows` (their current local state) in one transaction; returns what
 * changed. Exported for the tests, which ship the same rows twice.
 */
export async function shipRows(pool: PgPool, rows: readonly LocalRow[], bounds: NameBounds = DEFAULT_NAME_BOUNDS): Promise<Omit<ShipResult, 'entries'>> {
  const candidates = new Map<string, LocalRow>();
  for (const row of rows) if (row.request_id !== null) candidates.set(row.request_id, row);
  if (candidates.size === 0) return { inserted: 0, settled: 0, changes: [] };
  const changes: SpendChange[] = [];
  const note = (row: LocalRow, delta: RowCounts) => {
    if (delta.costMicros !== 0)
      changes.push({
        keyId: row.key_id,
        tenantId: row.tenant_id,
        day: calendarDay(row.created_at),
        microUsd: delta.costMicros,
        endUser: row.end_user,
        tags: decodeTags(row.tags),
        session: row.session,
      });
  };
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Rows older than the retention horizon are not shipped: PostgreSQL may have had and pruned them (retention.ts).
    const horizon = await client.query<{ pruned_before: number }>('SELECT pruned_before FROM ledger_retention WHERE id = 1 FOR SHARE');
    const prunedBefore = horizon.rows[0]?.pruned_before ?? 0;
    const byId = new Map([...candidates].filter(([, row]) => row.created_at >= prunedBefore));
    const ids = [...byId.keys()].sort();
    const held = new Map<string, HeldRow>();
    const lock = async (which: readonly string[]) => {
      const result = await client.query<HeldRow>(`SELECT ${STATE_COLUMNS} FROM ledger WHERE request_id = ANY($1::text[]) ORDER BY request_id FOR UPDATE`, [
        which,
      ]);
      for (const row of result.rows) held.set(row.request_id, row);
    };
    await lock(ids);
    const sums = new RollupSums();
    const toInsert = ids.filter((id) => transition(held.get(id), byId.get(id)!) === 'insert');
    let inserted = 0;
    if (toInsert.length > 0) {
      const names = await planNames(
        client,
        toInsert.map((id) => {
          const row = byId.get(id)!;
          return { ...row, request_id: id, day: calendarDay(row.created_at), tags: decodeTags(row.tags) };
        }),
        bounds,
      );
      const result = await client.query<{ request_id: string }>(
        `INSERT INTO ledger SELECT * FROM json_populate_recordset(null::ledger, $1::json) ORDER BY request_id ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
        [JSON.stringify(toInsert.map((id) => toPgRow(byId.get(id)!, names.folded.get(id))))],
      );
      const done = new Set(result.rows.map((r) => r.request_id));
      inserted = done.size;
      await names.record(client, done);
      for (const id of done) {
        const delta = countsDelta(undefined, byId.get(id)!);
        sums.add(byId.get(id)!, delta, names.folded.get(id) ?? 0);
        note(byId.get(id)!, delta);
      }
      // Another shipper of the same file inserted these first: treat them as held.
      const raced = toInsert.filter((id) => !done.has(id));
      if (raced.length > 0) await lock(raced);
    }
    const toSettle = ids.filter((id) => held.has(id) && transition(held.get(id), byId.get(id)!) === 'settle');
    let settled = 0;
    if (toSettle.length > 0) {
      const result = await client.query<{ request_id: string }>(
        `UPDATE ledger AS l SET status = v.status, completed_at = v.completed_at, http_status = v.http_status, prompt_tokens = v.prompt_tokens,
           cached_tokens = v.cached_tokens, completion_tokens = v.completion_tokens, reasoning_tokens = v.reasoning_tokens,
           audio_prompt_tokens = v.audio_prompt_tokens, audio_completion_tokens = v.audio_completion_tokens,
           cache_write_5m_tokens = v.cache_write_5m_tokens, cache_write_1h_tokens = v.cache_write_1h_tokens, service_tier = v.service_tier,
           tool_cost_micros = v.tool_cost_micros, cost_micros = v.cost_micros, upstream = v.upstream, attempts = v.attempts, billed_attempts = v.billed_attempts,
           usage_source = v.usage_source, latency_ms = v.latency_ms, ttft_ms = v.ttft_ms, upstream_request_id = v.upstream_request_id, error_code = v.error_code
         FROM json_populate_recordset(null::ledger, $1::json) AS v
         WHERE l.request_id = v.request_id AND l.status = 'pending'
         RETURNING l.request_id`,
        [JSON.stringify(toSettle.map((id) => toPgRow(byId.get(id)!)))],
      );
      settled = result.rows.length;
      for (const { request_id: id } of result.rows) {
        const delta = countsDelta(held.get(id), byId.get(id)!);
        // The rollup rows its insert chose in PostgreSQL.
        sums.add(byId.get(id)!, delta, held.get(id)!.rollup_folded);
        note(byId.get(id)!, delta);
      }
    }
    await sums.write(client);
    await client.query('COMMIT');
    return { inserted, settled, changes };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** A stored response's owner as the node holds it. */
export interface LocalResponse {
  readonly seq: number;
  readonly id: string | null;
  readonly key_id: string;
  readonly request_id: string;
  readonly created_at: number;
  readonly deleted_at: number | null;
  readonly item_of: string | null;
  readonly billed_tokens: number | null;
}

/**
 * Ships owners of stored responses (and of their items): new ones are added,
 * a deletion and a response's billed tokens are kept (the first one wins),
 * anything else already there is left alone — so shipping one twice changes
 * nothing.
 */
export async function shipResponses(pool: PgPool, rows: readonly LocalResponse[]): Promise<void> {
  const byId = new Map<string, Omit<LocalResponse, 'seq'>>();
  for (const { seq: _seq, ...row } of rows) if (row.id !== null) byId.set(row.id, row);
  if (byId.size === 0) return;
  await pool.query(
    `INSERT INTO responses (id, key_id, request_id, created_at, deleted_at, item_of, billed_tokens)
     SELECT id, key_id, request_id, created_at, deleted_at, item_of, billed_tokens FROM json_populate_recordset(null::responses, $1::json) ORDER BY id
     ON CONFLICT (id) DO UPDATE SET deleted_at = coalesce(responses.deleted_at, excluded.deleted_at),
       billed_tokens = coalesce(responses.billed_tokens, excluded.billed_tokens)
     WHERE (responses.deleted_at IS NULL AND excluded.deleted_at IS NOT NULL) OR (responses.billed_tokens IS NULL AND excluded.billed_tokens IS NOT NULL)`,
    [JSON.stringify([...byId.values()])],
  );
}
