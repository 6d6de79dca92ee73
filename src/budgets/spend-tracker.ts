/**
 * How much a key or tenant has spent in a budget period, as of *now*:
 *
 *   spent = rollups in the database (every process's committed rows, pending
 *           ones at their estimate; re-read at most every `refreshMs`)
 *         + what this process committed since that read
 *         + what this process has queued for the next commit.
 *
 * The last two are exact (the ledger writer reports each change), so a single
 * process never over-admits however many requests arrive in one turn; other
 * processes sharing the file are seen within `refreshMs`.
 *
 * Amounts are kept per calendar day, because a request settled after midnight is
 * filed under the day it was made, like the rollups do.
 *
 * The database read takes the rollup that holds the period whole: a month
 * from `rollups_monthly`, "total" from `rollups_lifetime` (one row per key,
 * where summing a tenant's days cost 1.7 ms at 90 days of 40 keys), less any
 * days filed after today (normally none), so it equals the sum of the days.
 */
import type { TollgateDatabase } from '../db/open.js';
import type Database from 'better-sqlite3';
import { addDays, periodStart, calendarDay, type BudgetPeriod } from '../calendar.js';

export interface SpendScope {
  readonly level: 'key' | 'tenant';
  readonly id: string;
}

/** The change a ledger write makes to the spend of a key (and its tenant). */
export interface SpendChange {
  readonly keyId: string;
  readonly tenantId: string | null;
  /** Calendar day the row is filed under (YYYY-MM-DD). */
  readonly day: string;
  readonly microUsd: number;
}

/** The UTC days a budget read covers. */
export interface SpendRead {
  readonly since: string;
  readonly until: string;
}

/**
 * Spend kept elsewhere than this file's rollups (replicas: pg-spend.ts): what
 * every node spent, or undefined when not known yet (this file's rollups
 * stand in).
 */
interface SpendSource {
  read(scope: SpendScope, period: BudgetPeriod, read: SpendRead): number | undefined;
}

interface Cached {
  readonly value: number;
  readonly readAt: number;
}

type DayAmounts = Map<string, number>;

function scopeKey(scope: SpendScope): string {
  return `${scope.level}:${scope.id}`;
}

function add(map: Map<string, DayAmounts>, scope: string, day: string, amount: number): void {
  if (amount === 0) return;
  let days = map.get(scope);
  if (days === undefined) {
    days = new Map();
    map.set(scope, days);
  }
  const next = (days.get(day) ?? 0) + amount;
  if (next === 0) days.delete(day);
  else days.set(day, next);
}

export class SpendTracker {
  private readonly refreshMs: number;
  /** Database reads, per scope·period·start. */
  private readonly cache = new Map<string, Cached>();
  /** What this process committed since each read (keyed like `cache`). */
  private readonly committedSinceRead = new Map<string, DayAmounts>();
  /** The reads open for each scope, so a commit can be added to all of them. */
  private readonly readsByScope = new Map<string, Set<string>>();
  /** Queued in the ledger writer, not committed yet, per scope. */
  private readonly queued = new Map<string, DayAmounts>();
  private readonly statements: Readonly<Record<SpendScope['level'], Readonly<Record<BudgetPeriod, Database.Statement>>>>;

  private readonly source: SpendSource | undefined;

  constructor(database: TollgateDatabase, options: { refreshMs?: number; source?: SpendSource } = {}) {
    this.refreshMs = options.refreshMs ?? 1000;
    this.source = options.source;
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
  }

  /** The ledger writer queued a change (synchronously, as the request is admitted or settled). */
  queuedChange(change: SpendChange): void {
    for (const scope of scopesOf(change)) add(this.queued, scope, change.day, change.microUsd);
  }

  /** The ledger writer committed a change it had queued. */
  committedChange(change: SpendChange): void {
    for (const scope of scopesOf(change)) {
      add(this.queued, scope, change.day, -change.microUsd);
      for (const read of this.readsByScope.get(scope) ?? []) add(this.committedSinceRead, read, change.day, change.microUsd);
    }
  }

  /** A queued change will never be committed (its `begin` failed and the request was refused). */
  droppedChange(change: SpendChange): void {
    for (const scope of scopesOf(change)) add(this.queued, scope, change.day, -change.microUsd);
  }

  /** Micro-USD spent by `scope` in the `period` containing `now`. */
  spent(scope: SpendScope, period: BudgetPeriod, now: number): number {
    const since = periodStart(period, now);
    const until = calendarDay(now);
    const key = scopeKey(scope);
    const read = `${key}|${period}|${since}`;
    let cached = this.cache.get(read);
    if (cached === undefined || now - cached.readAt >= this.refreshMs || now < cached.readAt) {
      const params =
        period === 'month'
          ? { id: scope.id, since, until, month: since.slice(0, 7), nextMonth: `${addDays(since, 32).slice(0, 7)}-01` }
          : { id: scope.id, since, until };
      const value = this.source?.read(scope, period, { since, until }) ?? (this.statements[scope.level][period].get(params) as { spent: number }).spent;
      cached = { value, readAt: now };
      this.cache.set(read, cached);
      // The read includes everything committed until now: count commits afresh from here.
      this.committedSinceRead.delete(read);
      let reads = this.readsByScope.get(key);
      if (reads === undefined) {
        reads = new Set();
        this.readsByScope.set(key, reads);
      }
      reads.add(read);
    }
    return cached.value + sumDays(this.committedSinceRead.get(read), since, until) + sumDays(this.queued.get(key), since, until);
  }
}

function scopesOf(change: SpendChange): string[] {
  return change.tenantId === null ? [`key:${change.keyId}`] : [`key:${change.keyId}`, `tenant:${change.tenantId}`];
}

function sumDays(days: DayAmounts | undefined, since: string, until: string): number {
  if (days === undefined) return 0;
  let total = 0;
  for (const [day, amount] of days) if (day >= since && day <= until) total += amount;
  return total;
}
