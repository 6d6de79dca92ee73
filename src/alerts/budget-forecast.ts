/**
 * The burn-rate forecast of an owner's budgets, for people: `tollgate spend`
 * and the dashboard's key page show the same sentence the alerts carry.
 * Reads the rollups (the period's spend as budgets count it, the last 24 h
 * from the hourly rollups); the math is forecast.ts.
 */
import { SpendTracker } from '../budgets/spend-tracker.js';
import { HOUR_MS, periodEnd, utcHour } from '../domain/calendar.js';
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import { budgetsOf, type Budget, type Policy } from '../domain/policy.js';
import { formatMicrosExact } from '../domain/money.js';
import { describeForecast, forecastRunOut, type Forecast } from './forecast.js';
import { AlertSpendReads, type SpendOwner } from './spend-reads.js';

export interface BudgetForecast {
  readonly level: 'key' | 'tenant';
  readonly name: string;
  readonly budget: Budget;
  readonly spentMicros: number;
  readonly forecast: Forecast;
  /** "at the last 24 h's rate ($12.40/day), today's budget lasts until 17:40 UTC" (forecast.ts) */
  readonly text: string;
}

/** The forecast of one budget from its period's spend and the owner's last 24 hours (and the current one). */
export function forecastBudget(
  reads: AlertSpendReads,
  owner: SpendOwner,
  budget: Pick<Budget, 'microUsd' | 'period'>,
  spentMicros: number,
  now: number,
): Forecast {
  const from = utcHour(now) - 24 * HOUR_MS;
  return forecastRunOut({
    spentMicros,
    limitMicros: budget.microUsd,
    windowSpendMicros: reads.hourSpend(owner, from, now + HOUR_MS),
    windowMs: now - from,
    now,
    periodEndsAt: periodEnd(budget.period, now),
    period: budget.period,
  });
}

/** Every budget of a key or tenant with its forecast, read from this database file. */
export function forecastBudgets(
  database: TollgateDatabase,
  owner: { level: 'key' | 'tenant'; id: string; name: string; policy: Policy | undefined },
  now: number,
): BudgetForecast[] {
  const budgets = owner.policy === undefined ? [] : budgetsOf(owner.policy);
  if (budgets.length === 0) return [];
  const tracker = new SpendTracker(database);
  const reads = new AlertSpendReads(database.sqlite);
  return budgets.map((budget) => {
    const spentMicros = tracker.spent({ level: owner.level, id: owner.id }, budget.period, now);
    const forecast = forecastBudget(reads, owner, budget, spentMicros, now);
    return { level: owner.level, name: owner.name, budget, spentMicros, forecast, text: describeForecast(forecast, formatMicrosExact, now) };
  });
}
