/**
 * The JSON bodies webhooks receive. Pure builders: money is exact decimal
 * USD text from integer micro-USD, times are ISO 8601 UTC. An event's id is
 * derived from what it is about (owner, period, threshold), so a receiver
 * that sees the same id twice — a retry after a lost answer — can drop it.
 */
import { createHash } from 'node:crypto';
import type { BudgetPeriod } from '../domain/calendar.js';
import { formatMicrosExact, formatMicrosFixed } from '../domain/money.js';
import { describeForecast, type Forecast } from './forecast.js';
import type { AlertEventType } from './settings.js';

export interface AlertOwner {
  readonly level: 'key' | 'tenant' | 'global';
  /** The key's or tenant's id; null for the global budgets. */
  readonly id: string | null;
  readonly name: string;
}

export interface BudgetFacts {
  readonly period: BudgetPeriod;
  readonly periodStart: number | null;
  readonly periodEnd: number | null;
  readonly limitMicros: number;
  readonly spentMicros: number;
  readonly percent: number;
}

interface ForecastBody {
  readonly ratePerDayUsd: string;
  readonly runsOutAt: string | null;
  readonly beforePeriodEnd: boolean | null;
  readonly text: string;
}

interface BudgetBody {
  readonly period: BudgetPeriod;
  readonly periodStart: string | null;
  readonly periodEnd: string | null;
  readonly limitUsd: string;
  readonly spentUsd: string;
  readonly percent: number;
}

export interface AlertEvent {
  readonly id: string;
  readonly type: AlertEventType | 'test';
  readonly createdAt: string;
  readonly owner: AlertOwner;
  readonly summary: string;
  readonly budget?: BudgetBody & { readonly threshold: number };
  readonly forecast?: ForecastBody;
  readonly velocity?: {
    readonly hourStart: string;
    readonly lastHourUsd: string;
    readonly trailingHourlyAverageUsd: string;
    readonly trailingHours: number;
    readonly factor: number;
  };
  /** The runaway stop paused the key, or one of its sessions or end users, or released it (src/alerts/runaway-stop.ts). */
  readonly runaway?: {
    readonly action: 'throttled' | 'released';
    /** The key's session paused or released (absent: the key itself, or an end user). */
    readonly session?: string;
    /** The key's end user paused or released. */
    readonly endUser?: string;
    readonly windowMinutes: number;
    readonly usdPerHour: string;
    readonly usualUsdPerHour: string;
    readonly trailingHours: number;
    readonly factor: number | null;
    readonly ceilingUsdPerHour: string | null;
  };
  /** The ledger drifted from a provider's bill beyond the tolerance (src/reconcile/drift-alert.ts). */
  readonly reconcile?: {
    readonly provider: string;
    /** The compared UTC days, `until` included. */
    readonly since: string;
    readonly until: string;
    readonly ledgerUsd: string;
    readonly billUsd: string;
    /** bill − ledger. */
    readonly differenceUsd: string;
    /** difference ÷ the larger side, in percent. */
    readonly differencePercent: number;
    readonly tolerancePercent: number;
    /** When the episode began: its first result beyond the tolerance. */
    readonly driftSince: string;
  };
  /** Present on `tollgate alerts test` deliveries only. */
  readonly test?: true;
}

/** A stable event id for a claim id: `evt_` and 24 hex digits. */
export function eventIdOf(claimId: string): string {
  return `evt_${createHash('sha256').update(claimId).digest('hex').slice(0, 24)}`;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function ownerText(owner: AlertOwner): string {
  return owner.level === 'global' ? 'all keys' : `${owner.level} ${owner.name}`;
}

function forecastBody(forecast: Forecast, now: number): ForecastBody {
  return {
    ratePerDayUsd: formatMicrosFixed(forecast.ratePerDayMicros),
    runsOutAt: iso(forecast.runsOutAt),
    beforePeriodEnd: forecast.beforePeriodEnd,
    text: describeForecast(forecast, formatMicrosExact, now),
  };
}

/** A budget reached `threshold` percent. */
export function thresholdEvent(input: {
  claimId: string;
  now: number;
  owner: AlertOwner;
  budget: BudgetFacts;
  threshold: number;
  forecast: Forecast;
}): AlertEvent {
  const { budget, owner } = input;
  const per = budget.period === 'total' ? 'lifetime' : budget.period === 'day' ? 'daily' : `${budget.period}ly`;
  return {
    id: eventIdOf(input.claimId),
    type: 'budget.threshold',
    createdAt: new Date(input.now).toISOString(),
    owner,
    summary: `${ownerText(owner)} reached ${input.threshold}% of its ${per} budget: ${formatMicrosExact(budget.spentMicros)} of ${formatMicrosExact(budget.limitMicros)}`,
    budget: {
      period: budget.period,
      periodStart: iso(budget.periodStart),
      periodEnd: iso(budget.periodEnd),
      limitUsd: formatMicrosFixed(budget.limitMicros),
      spentUsd: formatMicrosFixed(budget.spentMicros),
      percent: budget.percent,
      threshold: input.threshold,
    },
    forecast: forecastBody(input.forecast, input.now),
  };
}

/** The last hour's spend ran over k × the trailing hourly average. */
export function velocityEvent(input: {
  claimId: string;
  now: number;
  owner: AlertOwner;
  hourStart: number;
  lastHourMicros: number;
  averageMicros: number;
  trailingHours: number;
  factor: number;
}): AlertEvent {
  return {
    id: eventIdOf(input.claimId),
    type: 'spend.velocity',
    createdAt: new Date(input.now).toISOString(),
    owner: input.owner,
    summary: `${ownerText(input.owner)} spent ${formatMicrosExact(input.lastHourMicros)} this hour, over ${input.factor}× its hourly average of ${formatMicrosExact(input.averageMicros)} (last ${input.trailingHours} h)`,
    velocity: {
      hourStart: new Date(input.hourStart).toISOString(),
      lastHourUsd: formatMicrosFixed(input.lastHourMicros),
      trailingHourlyAverageUsd: formatMicrosFixed(input.averageMicros),
      trailingHours: input.trailingHours,
      factor: input.factor,
    },
  };
}

/** What `tollgate alerts test` sends: a threshold alert's shape, marked as a test. */
export function sampleEvent(now: number, forecast: Forecast): AlertEvent {
  const event = thresholdEvent({
    claimId: `test:${now}`,
    now,
    owner: { level: 'key', id: 'key_sample', name: 'sample-key' },
    budget: { period: 'month', periodStart: null, periodEnd: null, limitMicros: 50_000_000, spentMicros: 40_000_000, percent: 80 },
    threshold: 80,
    forecast,
  });
  return { ...event, type: 'test', test: true, summary: `test alert from tollgate: ${event.summary}` };
}
