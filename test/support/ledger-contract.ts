/**
 * The ledger over either backend, for its contract suite
 * (test/integration/storage/ledger.contract.test.ts): the node's writer, the
 * shipper on PostgreSQL, the ledger rows and rollups read back from the
 * backend that holds them, and what the rollups must be for those rows —
 * computed here from the rollup declaration (src/storage/rollup-spec.ts) and
 * each row's own counts, independently of the writer and the shipper.
 */
import { expect } from 'vitest';
import type { Backend } from '../../src/storage/backend.js';
import type { LedgerWriterOptions } from '../../src/storage/sqlite/ledger-writer.js';
import type { LedgerWriter } from '../../src/storage/ledger.js';
import { openLedgerWriter } from '../../src/storage/index.js';
import { LedgerShipper } from '../../src/storage/postgres/shipper.js';
import { PostgresSpendSource } from '../../src/storage/postgres/spend-source.js';
import { SpendTracker } from '../../src/budgets/spend-tracker.js';
import { SqliteKeyStore as KeyStore } from '../../src/storage/sqlite/keys.js';
import { PostgresKeyStore as PgKeyStore } from '../../src/storage/postgres/keys.js';
import { KeySync } from '../../src/storage/postgres/key-sync.js';
import { calendarDay, utcHour } from '../../src/domain/calendar.js';
import { decodeTags, rollupNamesOf, type NameBounds } from '../../src/domain/rollup-names.js';
import { countsOf, type LedgerState } from '../../src/storage/row-counts.js';
import { counterColumn, nameColumnOf, ROLLUP_TABLES, type KeyColumn } from '../../src/storage/rollup-spec.js';

/** A ledger row as the rollups see it. */
type PlacedRow = LedgerState & {
  readonly request_id: string;
  readonly key_id: string;
  readonly tenant_id: string | null;
  readonly model: string;
  readonly end_user: string | null;
  readonly tags: string | null;
  readonly rollup_folded: number | null;
};

const ROW_COLUMNS = `request_id, key_id, tenant_id, model, created_at, status, est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens,
  cached_tokens, completion_tokens, reasoning_tokens, cost_micros, error_code, end_user, tags, rollup_folded`;

export interface LedgerUnderTest {
  readonly backend: Backend;
  readonly writer: LedgerWriter;
  /** Commits what the writer queued and, on PostgreSQL, ships the outbox batch by batch. */
  settle(): Promise<void>;
  /** A key (in a tenant when `tenant` is given), known to the node and to the backend. */
  createKey(name: string, tenant?: string): Promise<{ keyId: string; tenantId: string | null }>;
  /** Rows of a query on the backend that holds the shared ledger. */
  query<T>(sql: string): Promise<T[]>;
  /** The ledger rows the rollups are sums of. */
  rows(): Promise<PlacedRow[]>;
  /** A budget reader as the node builds it (on PostgreSQL: its spend across nodes, freshly loaded). */
  spendTracker(): Promise<SpendTracker>;
}

export function ledgerUnderTest(backend: Backend, options: { nameBounds?: NameBounds; writer?: LedgerWriterOptions } = {}): LedgerUnderTest {
  const bounds = options.nameBounds === undefined ? {} : { nameBounds: options.nameBounds };
  const writer = openLedgerWriter(backend, { ...options.writer, ...bounds });
  const shipper = backend.kind === 'postgres' ? new LedgerShipper(backend.pool, backend.database, { batch: 7, ...bounds }) : undefined;
  const query = async <T>(sql: string): Promise<T[]> =>
    backend.kind === 'postgres' ? (await backend.pool.query(sql)).rows : (backend.database.sqlite.prepare(sql).all() as T[]);
  return {
    backend,
    writer,
    async settle() {
      expect(writer.flush()).toBe(true);
      while (shipper !== undefined && (await shipper.shipOnce()).entries > 0);
    },
    async createKey(name, tenant) {
      const input = { name, ...(tenant === undefined ? {} : { tenant }), policy: { limits: [] } };
      if (backend.kind === 'sqlite') {
        const { view } = new KeyStore(backend.database).createKey(input);
        return { keyId: view.id, tenantId: view.tenantId };
      }
      const { view } = await new PgKeyStore(backend.pool).createKey(input);
      await new KeySync(backend.pool, backend.database, { url: backend.pool.options.connectionString ?? '' }).pull();
      return { keyId: view.id, tenantId: view.tenantId };
    },
    query,
    rows: () => query<PlacedRow>(`SELECT ${ROW_COLUMNS} FROM ledger`),
    async spendTracker() {
      if (backend.kind === 'sqlite') return new SpendTracker(backend.database);
      const source = new PostgresSpendSource(backend.pool, backend.database);
      await source.loadAll();
      return new SpendTracker(backend.database, { source });
    },
  };
}

type RollupRows = Record<string, Record<string, number | string>>;

/** A rollup row's identity: its key columns' values. */
function idOf(row: Partial<Record<KeyColumn, string | number>>, keys: readonly KeyColumn[]): string {
  return keys.map((column) => String(row[column])).join('|');
}

/** What every rollup table must hold for `rows`: each row's counts (row-counts.ts) under every rollup row it is filed under. */
function rollupsOf(rows: readonly PlacedRow[]): Record<string, RollupRows> {
  const out: Record<string, RollupRows> = {};
  for (const [, spec] of ROLLUP_TABLES) {
    const table: RollupRows = {};
    out[spec.table] = table;
    for (const row of rows) {
      const createdAt = Number(row.created_at);
      const day = calendarDay(createdAt);
      const place: Record<KeyColumn, string | number> = {
        key_id: row.key_id,
        day,
        hour: utcHour(createdAt),
        month: day.slice(0, 7),
        model: row.model,
        end_user: '',
        tag: '',
      };
      const names = rollupNamesOf(row.end_user, decodeTags(row.tags), row.rollup_folded);
      const named = nameColumnOf(spec);
      const places =
        named === undefined
          ? [place]
          : named === 'end_user'
            ? names.endUser === undefined
              ? []
              : [{ ...place, end_user: names.endUser }]
            : names.tags.map((tag) => ({ ...place, tag }));
      const counts = countsOf(row);
      for (const at of places) {
        const id = idOf(at, spec.keys);
        let sum = table[id];
        if (sum === undefined) {
          sum = {};
          for (const column of spec.keys) sum[column] = at[column];
          for (const field of spec.counters) sum[counterColumn(field)] = 0;
          if (spec.lastRequestAt) sum.last_request_at = 0;
          table[id] = sum;
        }
        for (const field of spec.counters) (sum[counterColumn(field)] as number) += counts[field];
        if (spec.lastRequestAt) sum.last_request_at = Math.max(sum.last_request_at as number, createdAt);
      }
    }
  }
  return out;
}

/** Every rollup table as the backend holds it, keyed like {@link rollupsOf}; rows of only zeros (settled to nothing) left out. */
export async function readRollups(ledger: LedgerUnderTest): Promise<Record<string, RollupRows>> {
  const out: Record<string, RollupRows> = {};
  for (const [, spec] of ROLLUP_TABLES) {
    const table: RollupRows = {};
    out[spec.table] = table;
    for (const row of await ledger.query<Record<string, string | number>>(`SELECT * FROM ${spec.table}`)) {
      const sum: Record<string, number | string> = {};
      for (const column of spec.keys) sum[column] = column === 'hour' ? Number(row[column]) : row[column]!;
      for (const field of spec.counters) sum[counterColumn(field)] = Number(row[counterColumn(field)]);
      if (spec.lastRequestAt) sum.last_request_at = Number(row.last_request_at);
      table[idOf(sum as Record<KeyColumn, string | number>, spec.keys)] = sum;
    }
  }
  return out;
}

/** The backend's rollups equal the sums of its ledger rows, table by table, row by row. */
export async function expectRollupsEqualRows(ledger: LedgerUnderTest): Promise<void> {
  const want = rollupsOf(await ledger.rows());
  const got = await readRollups(ledger);
  for (const [, spec] of ROLLUP_TABLES) expect(got[spec.table], spec.table).toEqual(want[spec.table]);
}
