/**
 * PostgreSQL's side of the rollups: what a batch of shipped rows adds to
 * every rollup table (src/storage/rollup-spec.ts), summed per rollup row in
 * memory and upserted in key order, in the shipper's transaction. Rows are
 * filed as the writer files them in SQLite (src/storage/sqlite/ledger-rollups.ts): under
 * the period the request started in, one end user and each tag once, names
 * past the key's bound of the day as `(other)`.
 */
import type pg from 'pg';
import { calendarDay, utcHour } from '../../domain/calendar.js';
import { decodeTags } from '../../domain/rollup-names.js';
import { rollupNamesOf } from '../../domain/rollup-names.js';
import {
  addCounters,
  counterColumn,
  nameColumnOf,
  ROLLUP_TABLES,
  upsertColumns,
  upsertUpdates,
  ZERO_COUNTERS,
  type Counters,
  type KeyColumn,
  type RollupName,
  type RollupTable,
} from '../rollup-spec.js';

/** A rollup row's delta: its key columns (by column name), counters and latest request time. */
type RollupRow = Counters & { lastRequestAt: number } & Partial<Record<KeyColumn, string | number>>;

/** The ledger columns that place a row in the rollups. */
export interface PlacedRow {
  readonly key_id: string;
  readonly model: string;
  readonly created_at: number;
  readonly end_user: string | null;
  /** Comma-joined, as the writer stores them (src/endusers/attribution.ts). */
  readonly tags: string | null;
}

/** Sums deltas into the rows of every rollup table, keyed by their primary key. */
export class RollupSums {
  private readonly tables = new Map<RollupName, Map<string, RollupRow>>(ROLLUP_TABLES.map(([name]) => [name, new Map()]));

  add(row: PlacedRow, delta: Counters, folded: number | null): void {
    const day = calendarDay(row.created_at);
    const place: Record<KeyColumn, string | number> = {
      key_id: row.key_id,
      day,
      hour: utcHour(row.created_at),
      month: day.slice(0, 7),
      model: row.model,
      end_user: '',
      tag: '',
    };
    const names = rollupNamesOf(row.end_user, decodeTags(row.tags), folded);
    for (const [name, spec] of ROLLUP_TABLES) {
      const rows = this.tables.get(name)!;
      const named = nameColumnOf(spec);
      if (named === undefined) addTo(rows, spec, place, delta, row.created_at);
      else if (named === 'end_user') {
        if (names.endUser !== undefined) addTo(rows, spec, { ...place, end_user: names.endUser }, delta, row.created_at);
      } else for (const tag of names.tags) addTo(rows, spec, { ...place, tag }, delta, row.created_at);
    }
  }

  /** Upserts every table's rows (inside the caller's transaction). */
  async write(client: pg.PoolClient): Promise<void> {
    for (const [name, spec] of ROLLUP_TABLES) await upsertRollup(client, spec, this.tables.get(name)!.values());
  }
}

function addTo(rows: Map<string, RollupRow>, spec: RollupTable, place: Record<KeyColumn, string | number>, delta: Counters, at: number): void {
  const id = spec.keys.map((column) => place[column]).join('\u0000');
  let row = rows.get(id);
  if (row === undefined) {
    row = { ...ZERO_COUNTERS, lastRequestAt: 0 };
    for (const column of spec.keys) row[column] = place[column];
    rows.set(id, row);
  }
  addCounters(row, delta);
  row.lastRequestAt = Math.max(row.lastRequestAt, at);
}

/** Adds `rows` to `spec`'s table, in key order (nodes shipping at once never deadlock). */
async function upsertRollup(client: pg.PoolClient, spec: RollupTable, rows: Iterable<RollupRow>): Promise<void> {
  const records = [...rows].map((row) => {
    const record: Record<string, unknown> = {};
    for (const key of spec.keys) record[key] = row[key];
    for (const field of spec.counters) record[counterColumn(field)] = row[field];
    if (spec.lastRequestAt) record.last_request_at = row.lastRequestAt;
    return record;
  });
  if (records.length === 0) return;
  const columns = upsertColumns(spec).join(', ');
  const keys = spec.keys.join(', ');
  await client.query(
    `INSERT INTO ${spec.table} (${columns})
     SELECT ${columns} FROM json_populate_recordset(null::${spec.table}, $1::json) ORDER BY ${keys}
     ON CONFLICT (${keys}) DO UPDATE SET ${upsertUpdates(spec, (column) => `${spec.table}.${column}`, 'greatest')}`,
    [JSON.stringify(records)],
  );
}
