/**
 * A key's page as data (/dashboard/keys/:id renders it; GET /admin/api/dashboard/keys/:id returns
 * it for the page's polling): facts, totals, charts, budget and its forecast, limits (live from
 * the limiter when it is wired in), spend by model, top end users and tags, recent 429s and the
 * latest ledger rows, each with its display text. The markup is key-page.tsx and key-panels.tsx.
 */
import type { SpendTotals } from '../storage/spend-reads.js';
import { formatLimit, type LimitSpec } from '../domain/policy.js';
import type { KeyStatus } from '../domain/keys.js';
import { describeAttributedPolicy } from '../domain/policy-options.js';
import { budgetItem, type BudgetItem } from './budget-view.js';
import { describeForecast, forecastRunOut } from '../alerts/forecast.js';
import { HOUR_MS, periodEnd, periodStart, utcHour } from '../domain/calendar.js';
import { formatMicrosExact } from '../domain/money.js';
import { chartOfDays, chartOfHours, type ChartData } from './chart-view.js';
import { keyStatusOf } from '../domain/keys.js';
import type { KeyRecord } from '../storage/directory.js';
import { count, percent, relativeTime, timestamp, usd } from './format.js';
import { periodDays } from '../storage/dashboard-figures.js';
import type { PeriodTotals } from '../storage/dashboard-reads.js';
import { requestItem, type RequestItem } from './request-list.js';
import { inFlightText, keyHref, tokensOf, updatedText, type LimitSnapshotEntry, type ViewContext } from './view-context.js';

/** One of a key's limits, with its live state when the limiter provides one. */
export interface LimitItem {
  readonly name: string;
  readonly spec: string;
  /** remaining / burst from the limiter, or null when not available. */
  readonly fraction: number | null;
  readonly meter: number;
  readonly text: { readonly spec: string; readonly live: string };
}

/** A key's spend on one model this month. */
export interface ModelItem {
  readonly model: string;
  readonly totals: SpendTotals;
  readonly share: number;
  readonly text: { readonly requests: string; readonly tokens: string; readonly spend: string; readonly share: string };
}

/** One of a key's top end users or tags this month. */
export interface TopItem {
  readonly name: string;
  readonly totals: SpendTotals;
  readonly share: number;
  readonly text: { readonly requests: string; readonly spend: string; readonly share: string; readonly rejected: string };
}

/** One of a key's agent sessions this month: a top item with how long it ran (first to last request). */
export interface SessionItem extends TopItem {
  readonly firstAt: number | null;
  readonly lastAt: number | null;
  readonly durationMs: number | null;
  readonly text: TopItem['text'] & { readonly duration: string };
}

/** End users and tags listed on a key's page (the most spent first). */
export const TOP_ROWS = 10;

/** A key's page and GET /admin/api/dashboard/keys/:id. */
export interface KeyPageView {
  readonly page: 'key';
  readonly generatedAt: number;
  readonly key: {
    readonly id: string;
    readonly name: string;
    readonly tenant: string | null;
    readonly prefix: string;
    readonly status: KeyStatus;
    readonly createdAt: number;
    readonly expiresAt: number | null;
    readonly models: readonly string[] | null;
    readonly policyError: string | null;
    /** What each end user gets, and the tag budgets (src/endusers), as label and text. */
    readonly perUser: ReadonlyArray<readonly [string, string]>;
  };
  readonly totals: { readonly today: PeriodTotals; readonly month: PeriodTotals };
  readonly budget: BudgetItem | null;
  readonly limits: readonly LimitItem[];
  /** False when no limiter snapshot is wired in. */
  readonly limitsLive: boolean;
  readonly models: readonly ModelItem[];
  /** The key's end users and tags that spent the most this month. */
  readonly topUsers: readonly TopItem[];
  readonly topTags: readonly TopItem[];
  readonly topSessions: readonly SessionItem[];
  readonly latest: readonly RequestItem[];
  readonly recent429: readonly RequestItem[];
  readonly charts: { readonly hourly: ChartData; readonly daily: ChartData };
  readonly text: Readonly<Record<KeyPageText, string>>;
}

type KeyPageText =
  | 'status'
  | 'tenant'
  | 'created'
  | 'expires'
  | 'models'
  | 'spendToday'
  | 'spendMonth'
  | 'requestsToday'
  | 'requestsMonth'
  | 'tokensToday'
  | 'tokensMonth'
  | 'rejectedToday'
  | 'rejectedMonth'
  | 'errorsMonth'
  | 'pending'
  | 'lastUsed'
  | 'lastUsedAt'
  | 'budgetForecast'
  | 'updated';

const LATEST_ROWS = 50;
const RECENT_429_ROWS = 20;

function formatAmount(unit: string, amount: number): string {
  if (unit === 'usd') return usd(Math.round(amount));
  return count(Math.floor(amount));
}

function limitItems(key: KeyRecord, snapshot: ReadonlyArray<LimitSnapshotEntry> | undefined): LimitItem[] {
  const limits: readonly LimitSpec[] = key.policy?.limits ?? [];
  const live = new Map((snapshot ?? []).map((entry) => [entry.limitName, entry]));
  const item = (name: string, spec: string, entry: LimitSnapshotEntry | undefined): LimitItem => {
    const fraction = entry === undefined || !(entry.burst > 0) ? null : Math.max(0, entry.remaining) / entry.burst;
    return {
      name,
      spec,
      fraction,
      meter: fraction === null ? 0 : Math.min(1, fraction),
      text: {
        spec,
        live:
          entry === undefined
            ? 'not available'
            : `${formatAmount(entry.unit, Math.max(0, entry.remaining))} of ${formatAmount(entry.unit, entry.burst)}${entry.unit === 'usd' ? '' : ` ${entry.unit}`} left (${percent(fraction ?? 0)})`,
      },
    };
  };
  const items = limits.map((limit) => item(limit.name, formatLimit(limit), snapshot === undefined ? undefined : live.get(limit.name)));
  // Buckets the limiter reports beyond the key's own (its tenant's, the global one).
  for (const entry of snapshot ?? []) {
    if (!limits.some((limit) => limit.name === entry.limitName))
      items.push(item(entry.limitName, `${entry.unit}, burst ${formatAmount(entry.unit, entry.burst)}`, entry));
  }
  return items;
}

/** One key's page, or undefined when there is no such key. */
export async function buildKeyPage(ctx: ViewContext, keyId: string): Promise<KeyPageView | undefined> {
  const { reads, now } = ctx;
  const directory = await reads.directory();
  const key = directory.keysById.get(keyId);
  if (key === undefined) return undefined;
  const { today: todayDay, monthStart } = periodDays(now);
  const budgetSpec = key.policy?.budget;
  // At once: on PostgreSQL each read is a round trip.
  const [today, month, modelTotals, periodCost, latestRows, recent429Rows, hourly, daily, topUserRows, topTagRows, topSessionRows] = await Promise.all([
    reads.keyTotals(key.id, todayDay, now),
    reads.keyTotals(key.id, monthStart, now),
    reads.keyModels(key.id, monthStart, now),
    // A week's spend is its days' totals; only a budget "in total" needs the lifetime.
    budgetSpec?.period === 'week'
      ? reads.keyTotals(key.id, periodStart('week', now), now).then((totals) => totals.costMicros)
      : budgetSpec?.period === 'total'
        ? reads.keyLifetimeCost(key.id, now)
        : 0,
    reads.latestRequests(key.id, LATEST_ROWS),
    reads.recent429s(key.id, RECENT_429_ROWS),
    reads.hourlySeries(now, key.id),
    reads.keyDailySeries(key.id, now),
    reads.keyTop(key.id, 'user', monthStart, now, TOP_ROWS),
    reads.keyTop(key.id, 'tag', monthStart, now, TOP_ROWS),
    reads.keyTop(key.id, 'session', monthStart, now, TOP_ROWS),
  ]);
  const models = modelTotals.map(({ model, totals }): ModelItem => {
    const share = month.costMicros > 0 ? totals.costMicros / month.costMicros : 0;
    return {
      model,
      totals,
      share,
      text: {
        requests: count(totals.requests),
        tokens: `${count(totals.promptTokens)} → ${count(totals.completionTokens)}`,
        spend: usd(totals.costMicros),
        share: percent(share),
      },
    };
  });
  const top = (rows: ReadonlyArray<{ name: string; totals: SpendTotals }>): TopItem[] =>
    rows.map(({ name, totals }) => {
      const share = month.costMicros > 0 ? totals.costMicros / month.costMicros : 0;
      const rejected = totals.rejectedRateLimit + totals.rejectedBudget;
      return {
        name,
        totals,
        share,
        text: { requests: count(totals.requests), spend: usd(totals.costMicros), share: percent(share), rejected: count(rejected) },
      };
    });
  let budget: BudgetItem | null = null;
  if (budgetSpec !== undefined) {
    const spent = budgetSpec.period === 'day' ? today.costMicros : budgetSpec.period === 'month' ? month.costMicros : periodCost;
    budget = budgetItem('key', key.id, key.name, keyHref(key.id), budgetSpec, spent);
  }
  // The burn-rate forecast the alerts carry (src/alerts/forecast.ts), from the chart's last 24 hours and this one.
  let budgetForecast = '';
  if (budgetSpec !== undefined && budget !== null) {
    const from = utcHour(now) - 24 * HOUR_MS;
    const forecast = forecastRunOut({
      spentMicros: budget.spentMicros,
      limitMicros: budgetSpec.microUsd,
      windowSpendMicros: hourly.reduce((sum, point) => (point.hour >= from ? sum + point.costMicros : sum), 0),
      windowMs: now - from,
      now,
      periodEndsAt: periodEnd(budgetSpec.period, now),
      period: budgetSpec.period,
    });
    budgetForecast = describeForecast(forecast, formatMicrosExact, now);
  }
  const latest = latestRows.rows.map((row) => requestItem(row, now));
  const lastUsedAt = latest[0]?.createdAt ?? null;
  const status = keyStatusOf(key, now);
  const snapshot = ctx.limitSnapshot?.(key.id);
  return {
    page: 'key',
    generatedAt: now,
    key: {
      id: key.id,
      name: key.name,
      tenant: key.tenant,
      prefix: key.prefix,
      status,
      createdAt: key.createdAt,
      expiresAt: key.expiresAt,
      models: key.policy?.models ?? null,
      policyError: key.policyError ?? null,
      perUser: key.policy === undefined ? [] : describeAttributedPolicy(key.policy),
    },
    totals: { today, month },
    budget,
    limits: limitItems(key, snapshot),
    limitsLive: ctx.limitSnapshot !== undefined,
    models,
    topUsers: top(topUserRows.rows),
    topTags: top(topTagRows.rows),
    topSessions: top(topSessionRows.rows).map((item, i) => sessionItem(item, topSessionRows.rows[i]!)),
    latest,
    recent429: recent429Rows.rows.map((row) => requestItem(row, now)),
    charts: {
      hourly: chartOfHours(hourly, ['spend', 'tokens']),
      daily: chartOfDays(daily, ['spend', 'tokens']),
    },
    text: {
      status,
      tenant: key.tenant ?? 'none',
      created: timestamp(key.createdAt),
      expires: key.expiresAt === null ? 'never' : timestamp(key.expiresAt),
      models: key.policy?.models === undefined ? 'all models' : key.policy.models.join(', '),
      spendToday: usd(today.costMicros),
      spendMonth: usd(month.costMicros),
      requestsToday: count(today.requests),
      requestsMonth: count(month.requests),
      tokensToday: count(tokensOf(today)),
      tokensMonth: count(tokensOf(month)),
      rejectedToday: count(today.rejectedRateLimit + today.rejectedBudget),
      rejectedMonth: count(month.rejectedRateLimit + month.rejectedBudget),
      errorsMonth: count(month.errors),
      pending: inFlightText(today.pending),
      lastUsed: relativeTime(lastUsedAt, now),
      lastUsedAt: timestamp(lastUsedAt),
      budgetForecast,
      updated: updatedText(now),
    },
  };
}

/** A session's row: its duration from its first to its last request. */
function sessionItem(item: TopItem, row: { firstAt?: number; lastAt?: number }): SessionItem {
  const durationMs = row.firstAt === undefined || row.lastAt === undefined ? null : row.lastAt - row.firstAt;
  return {
    ...item,
    firstAt: row.firstAt ?? null,
    lastAt: row.lastAt ?? null,
    durationMs,
    text: { ...item.text, duration: durationMs === null ? '' : formatDuration(durationMs) },
  };
}

/** `1h 02m`, `12m 30s`, `45s`. */
function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}
