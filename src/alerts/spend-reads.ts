/**
 * The spend alerts read beside the budgets' own (SpendTracker): an owner's
 * spend over a range of UTC hours (the forecast's last 24 h, the velocity
 * check's hours) from `rollups_hourly`, and the spend of every key in a
 * budget period for the global alert budgets. Reads only, from the rollups.
 */
import type Database from 'better-sqlite3';
import { calendarDay, periodStart, type BudgetPeriod } from '../domain/calendar.js';

/** Whose spend: a key, a tenant's keys, or every key (id null). */
export interface SpendOwner {
  readonly level: 'key' | 'tenant' | 'global';
  readonly id: string | null;
}

export class AlertSpendReads {
  private readonly hours: Record<SpendOwner['level'], Database.Statement>;
  private readonly globalDays: Database.Statement;
  private readonly keyRecent: Database.Statement;

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

  /** Spent by every key in the budget period containing `now`. */
  globalSpent(period: BudgetPeriod, now: number): number {
    return (this.globalDays.get({ since: periodStart(period, now), until: calendarDay(now) }) as { spent: number }).spent;
  }
}
