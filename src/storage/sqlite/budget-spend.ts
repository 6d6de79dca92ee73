/**
 * Spend read from the node's own rollups (src/budgets/spend-tracker.ts adds
 * what this process committed and queued since). The read takes the rollup
 * that holds the period whole: a month from `rollups_monthly`, "total" from
 * `rollups_lifetime` (one row per key, where summing a tenant's days cost
 * 1.7 ms at 90 days of 40 keys), less any days filed after today (normally
 * none), so it equals the sum of the days. End users and tags sum their own
 * daily rollups.
 */
import type Database from 'better-sqlite3';
import type { TollgateDatabase } from './open.js';
import { addDays, type BudgetPeriod } from '../../domain/calendar.js';
import { ROW_SPEND_SQL, sessionReadRange } from '../session-spend.js';
import { isAttributed, type AttributedScope, type BudgetScope, type SpendReads, type SpendRead, type SpendScope } from '../ledger.js';

export class SqliteSpendReads implements SpendReads {
  private readonly statements: Readonly<Record<SpendScope['level'], Readonly<Record<BudgetPeriod, Database.Statement>>>>;
  /** An end user's or a tag's days in [since, until]. */
  private readonly attributed: Readonly<Record<Exclude<AttributedScope['level'], 'session'>, Database.Statement>>;
  /** A session's own rows (src/storage/session-spend.ts). */
  private readonly session: Database.Statement;

  constructor(database: TollgateDatabase) {
    const s = database.sqlite;
    // A scope's rollup rows: one key's, or those of every key of a tenant.
    const of = (level: SpendScope['level'], table: string, where: string) =>
      level === 'key'
        ? `SELECT coalesce(sum(cost_micros), 0) FROM ${table} WHERE key_id = @id AND ${where}`
        : `SELECT coalesce(sum(r.cost_micros), 0) FROM ${table} r JOIN api_keys k ON k.id = r.key_id WHERE k.tenant_id = @id AND ${where}`;
    const statementsOf = (level: SpendScope['level']) => ({
      day: s.prepare(`SELECT (${of(level, 'rollups_daily', 'day >= @since AND day <= @until')}) AS spent`),
      week: s.prepare(`SELECT (${of(level, 'rollups_daily', 'day >= @since AND day <= @until')}) AS spent`),
      month: s.prepare(
        `SELECT (${of(level, 'rollups_monthly', 'month = @month')}) - (${of(level, 'rollups_daily', 'day > @until AND day < @nextMonth')}) AS spent`,
      ),
      total: s.prepare(`SELECT (${of(level, 'rollups_lifetime', '1')}) - (${of(level, 'rollups_daily', 'day > @until')}) AS spent`),
    });
    this.statements = { key: statementsOf('key'), tenant: statementsOf('tenant') };
    const days = (table: string, column: string) =>
      s.prepare(`SELECT coalesce(sum(cost_micros), 0) AS spent FROM ${table} WHERE key_id = @keyId AND ${column} = @name AND day >= @since AND day <= @until`);
    this.attributed = { user: days('rollups_end_users', 'end_user'), tag: days('rollups_tags', 'tag') };
    this.session = s.prepare(
      `SELECT coalesce(sum(${ROW_SPEND_SQL}), 0) AS spent FROM ledger AS l
       WHERE l.key_id = @keyId AND l.session = @name AND l.created_at >= @from AND l.created_at < @to`,
    );
  }

  read(scope: BudgetScope, period: BudgetPeriod, { since, until }: SpendRead): number {
    if (isAttributed(scope)) {
      if (scope.level === 'session')
        return (this.session.get({ keyId: scope.keyId, name: scope.name, ...sessionReadRange({ since, until }) }) as { spent: number }).spent;
      return (this.attributed[scope.level].get({ keyId: scope.keyId, name: scope.name, since, until }) as { spent: number }).spent;
    }
    const params =
      period === 'month'
        ? { id: scope.id, since, until, month: since.slice(0, 7), nextMonth: `${addDays(since, 32).slice(0, 7)}-01` }
        : { id: scope.id, since, until };
    return (this.statements[scope.level][period].get(params) as { spent: number }).spent;
  }
}
