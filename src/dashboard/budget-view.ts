/** A budget bar's view model (overview, keys table, key page) and what a budget's period has spent. */
import { budgetsOf, type Budget, type BudgetPeriod } from '../domain/policy.js';
import type { KeyRecord } from '../storage/directory.js';
import { percent, usd } from './format.js';
import type { SpendByKey } from '../storage/dashboard-reads.js';
import { keyHref } from './view-context.js';

/** Warning levels for a budget bar. */
export type Level = 'ok' | 'warn' | 'over';

/** A key's or tenant's budget and how much of it the period has used. */
export interface BudgetItem {
  readonly owner: 'key' | 'tenant';
  readonly id: string;
  readonly name: string;
  readonly href: string;
  readonly period: BudgetPeriod;
  readonly capMicros: number;
  readonly spentMicros: number;
  /** spent / cap (may exceed 1). */
  readonly fraction: number;
  /** The meter's value: the fraction, capped at 1. */
  readonly meter: number;
  readonly level: Level;
  readonly text: { readonly owner: string; readonly spent: string; readonly cap: string; readonly percent: string; readonly period: string };
}

function levelOf(fraction: number): Level {
  return fraction >= 1 ? 'over' : fraction >= 0.8 ? 'warn' : 'ok';
}

const PERIOD_TEXT: Record<BudgetPeriod, string> = { day: 'per day', week: 'per week', month: 'per month', total: 'in total' };

/** A budget bar: `spentMicros` of `budget` used by a key or tenant. */
export function budgetItem(owner: 'key' | 'tenant', id: string, name: string, href: string, budget: Budget, spentMicros: number): BudgetItem {
  const fraction = spentMicros / budget.microUsd;
  return {
    owner,
    id,
    name,
    href,
    period: budget.period,
    capMicros: budget.microUsd,
    spentMicros,
    fraction,
    meter: Math.min(1, Math.max(0, fraction)),
    level: levelOf(fraction),
    text: {
      owner: owner === 'key' ? 'key' : 'tenant',
      spent: usd(spentMicros),
      cap: usd(budget.microUsd),
      percent: percent(fraction),
      period: PERIOD_TEXT[budget.period],
    },
  };
}

/** What a key (or a tenant, summing its keys) has spent in its budget's period. */
export function spentInBudgetPeriod(spend: SpendByKey, keyIds: readonly string[], period: BudgetPeriod): number {
  let total = 0;
  for (const id of keyIds) {
    if (period === 'day') total += spend.todayByKey.get(id)?.costMicros ?? 0;
    else if (period === 'week') total += spend.weekCostByKey.get(id) ?? 0;
    else if (period === 'month') total += spend.monthByKey.get(id)?.costMicros ?? 0;
    else total += spend.lifetimeCostByKey.get(id) ?? 0;
  }
  return total;
}

/** A key's budget and its use — the most used one when it has several — or null without one. */
export function keyBudget(spend: SpendByKey, key: KeyRecord): BudgetItem | null {
  let tightest: BudgetItem | null = null;
  for (const budget of budgetsOf(key.policy)) {
    const item = budgetItem('key', key.id, key.name, keyHref(key.id), budget, spentInBudgetPeriod(spend, [key.id], budget.period));
    if (tightest === null || item.fraction > tightest.fraction) tightest = item;
  }
  return tightest;
}
