/**
 * The rollup declaration (src/storage/rollup-spec.ts) is the one place a
 * counter or rollup table is named: both schemas and SQLite's trigger
 * migration must say the same, or the rollups stop equalling their rows.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getTableConfig as sqliteTableConfig, type SQLiteTable } from 'drizzle-orm/sqlite-core';
import { getTableConfig as pgTableConfig, type PgTable } from 'drizzle-orm/pg-core';
import * as sqliteSchema from '../../../src/storage/sqlite/schema.js';
import * as pgSchema from '../../../src/storage/postgres/schema.js';
import { MIGRATIONS_FOLDER } from '../../../src/storage/sqlite/open.js';
import {
  addCounters,
  COUNTERS,
  ROLLUP_TABLES,
  subtractCounters,
  sqliteFollowTriggers,
  upsertColumns,
  ZERO_COUNTERS,
} from '../../../src/storage/rollup-spec.js';

interface TableShape {
  readonly columns: string[];
  readonly primaryKey: string[];
}

function shapes<T>(
  schema: Record<string, unknown>,
  isTable: (value: unknown) => value is T,
  config: (table: T) => TableShape & { name: string },
): Map<string, TableShape> {
  const out = new Map<string, TableShape>();
  for (const value of Object.values(schema)) {
    if (!isTable(value)) continue;
    const { name, columns, primaryKey } = config(value);
    out.set(name, { columns, primaryKey });
  }
  return out;
}

const sqliteTables = shapes(
  sqliteSchema as Record<string, unknown>,
  (value): value is SQLiteTable => typeof value === 'object' && value !== null && Symbol.for('drizzle:IsDrizzleTable') in value,
  (table) => {
    const config = sqliteTableConfig(table);
    const inline = config.columns.filter((column) => column.primary).map((column) => column.name);
    return {
      name: config.name,
      columns: config.columns.map((column) => column.name).sort(),
      primaryKey: config.primaryKeys[0]?.columns.map((column) => column.name) ?? inline,
    };
  },
);
const pgTables = shapes(
  pgSchema as Record<string, unknown>,
  (value): value is PgTable => typeof value === 'object' && value !== null && Symbol.for('drizzle:IsDrizzleTable') in value,
  (table) => {
    const config = pgTableConfig(table);
    const inline = config.columns.filter((column) => column.primary).map((column) => column.name);
    return {
      name: config.name,
      columns: config.columns.map((column) => column.name).sort(),
      primaryKey: config.primaryKeys[0]?.columns.map((column) => column.name) ?? inline,
    };
  },
);

describe('the rollup declaration', () => {
  it('has one zero for every counter', () => {
    expect(Object.keys(ZERO_COUNTERS)).toEqual(COUNTERS.map(([, field]) => field));
    expect(Object.values(ZERO_COUNTERS).every((value) => value === 0)).toBe(true);
  });

  it('adds and subtracts every counter, each on its own, and leaves absent ones alone', () => {
    for (const [, field] of COUNTERS) {
      const row = { ...ZERO_COUNTERS, requests: 5 };
      addCounters(row, { [field]: 3 });
      expect(row).toEqual({ ...ZERO_COUNTERS, requests: 5, [field]: field === 'requests' ? 8 : 3 });
      expect(subtractCounters(row, { ...ZERO_COUNTERS, requests: 5 })).toEqual({ ...ZERO_COUNTERS, [field]: 3 });
    }
  });

  it.each([
    ['SQLite', sqliteTables],
    ['PostgreSQL', pgTables],
  ])('declares the rollup tables of the %s schema: the same columns and primary keys', (_, tables) => {
    for (const [, spec] of ROLLUP_TABLES) {
      const table = tables.get(spec.table);
      expect(table, spec.table).toBeDefined();
      expect(table!.columns, spec.table).toEqual(upsertColumns(spec).sort());
      expect(table!.primaryKey, spec.table).toEqual(spec.keys);
    }
  });

  it('gives the SQLite triggers that drizzle/0005 creates, so the tables following rollups_daily keep every counter', () => {
    const migration = readFileSync(join(MIGRATIONS_FOLDER, '0005_rollup-triggers.sql'), 'utf8');
    const statements = migration
      .split('--> statement-breakpoint')
      .map((statement) =>
        statement
          .split('\n')
          .filter((line) => !line.startsWith('--'))
          .join('\n')
          .trim(),
      )
      .filter((statement) => statement !== '');
    expect(statements).toEqual(sqliteFollowTriggers());
  });
});
