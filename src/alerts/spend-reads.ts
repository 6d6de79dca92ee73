/**
 * The spend alerts read beside the budgets' own (SpendTracker): an owner's
 * spend over a range of UTC hours (the forecast's last 24 h, the velocity
 * check's hours) from `rollups_hourly`, and the spend of every key in a
 * budget period for the global alert budgets. Reads only, from the rollups.
 */
import type Database from 'better-sqlite3';
import { calendarDay, periodStart, type BudgetPeriod } from '../domain/calendar.js';
import type { PauseOwner } from '../domain/keys.js';

/** Whose spend: a key, a tenant's keys, or every key (id null). */
export interface SpendOwner {
  readonly level: 'key' | 'tenant' | 'global';
  readonly id: string | null;
}

export class AlertSpendReads {
  private readonly hours: Record<SpendOwner['level'], Database.Statement>;
  private readonly globalDays: Database.Statement;
  private readonly keyRecent: Database.Statement;
  private readonly ownersRecent: Record<PauseOwner['level'], Database.Statement>;
  private readonly ownerRecent: Record<PauseOwner['level'], Database.Statement>;

  constructor(sqlite: Database.Database) {
    this.hours = {
      key: sqlite.prepare('SELECT coalesce(sum(cost_micros), 0) AS spent FROM rollups_hourly WHERE key_id = @id AND hour >= @from AND hour < @to'),
      tenant: sqlite.prepare(
        'SELECT coalesce(sum(r.cost_micros), 0) AS spent FROM rollups_hourly r JOIN api_keys k ON k.id = r.key_id WHERE k.tenant_id = @id AND r.hour >= @from AND r.hour < @to',
      ),
      global: sqlite.prepare('SELECT coalesce(sum(cost_micros), 0) AS spent FROM rollups_hourly WHERE hour >= @from AND hour < @to'),
    };
    // The ledger's own rows, by the (key_id, created_at) index: the runaway stop's window is minutes, not hours.
    this.keyRecent = sqlite.prepare('SELECT coalesce(sum(cost_micros), 0) AS spent FROM ledger WHERE key_id = ? AND created_at >= ? AND created_at < ?');
    // A key's sessions and end users that spent the most in the window (the same rows, grouped).
    const owners = (column: string): Database.Statement =>
      sqlite.prepare(
        `SELECT ${column} AS name, sum(cost_micros) AS spent FROM ledger WHERE key_id = ? AND created_at >= ? AND created_at < ? AND ${column} IS NOT NULL
         GROUP BY ${column} HAVING spent >= ? ORDER BY spent DESC LIMIT ?`,
      );
    this.ownersRecent = { session: owners('session'), end_user: owners('end_user') };
    const owner = (column: string): Database.Statement =>
      sqlite.prepare(`SELECT coalesce(sum(cost_micros), 0) AS spent FROM ledger WHERE key_id = ? AND ${column} = ? AND created_at >= ? AND created_at < ?`);
    this.ownerRecent = { session: owner('session'), end_user: owner('end_user') };
    this.globalDays = sqlite.prepare('SELECT coalesce(sum(cost_micros), 0) AS spent FROM rollups_daily_total WHERE day >= @since AND day <= @until');
  }

  /** Spent by `owner` in the UTC hours starting in [fromMs, toMs). */
  hourSpend(owner: SpendOwner, fromMs: number, toMs: number): number {
    return (this.hours[owner.level].get({ id: owner.id, from: fromMs, to: toMs }) as { spent: number }).spent;
  }

  /** Spent by a key's requests made in [fromMs, toMs), from the ledger (settled rows; pending ones have no cost yet). */
  recentKeySpend(keyId: string, fromMs: number, toMs: number): number {
    return (this.keyRecent.get(keyId, fromMs, toMs) as { spent: number }).spent;
  }

  /** The key's sessions or end users that spent at least `minimum` in [fromMs, toMs), the most first, at most `limit`. */
  recentOwners(
    keyId: string,
    level: PauseOwner['level'],
    fromMs: number,
    toMs: number,
    minimum: number,
    limit: number,
  ): Array<{ name: string; spent: number }> {
    return this.ownersRecent[level].all(keyId, fromMs, toMs, minimum, limit) as Array<{ name: string; spent: number }>;
  }

  /** Spent by one session or end user of the key in [fromMs, toMs). */
  recentOwnerSpend(keyId: string, owner: PauseOwner, fromMs: number, toMs: number): number {
    return (this.ownerRecent[owner.level].get(keyId, owner.name, fromMs, toMs) as { spent: number }).spent;
  }

  /** Spent by every key in the budget period containing `now`. */
  globalSpent(period: BudgetPeriod, now: number): number {
    return (this.globalDays.get({ since: periodStart(period, now), until: calendarDay(now) }) as { spent: number }).spent;
  }
}
