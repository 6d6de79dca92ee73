/**
 * The dashboard's view models: what each page shows, with raw numbers (for
 * API users and tests) next to the text people read. The server renders a
 * page from its view model; the browser polls the same view model as JSON and
 * binds it into the same markup, so the two can never show different things.
 */
import { TollgateError } from '../errors.js';
import type { SpendTotals } from '../reports/spend.js';
import { formatLimit, type Budget, type BudgetPeriod, type LimitSpec } from '../limits/policy.js';
import type { KeyStatus } from '../keys/store.js';
import { count, duration, percent, relativeTime, timestamp, usd } from './format.js';
import { keyStatusOf, periodDays, type DashboardReads, type DayPoint, type HourPoint, type KeyRecord, type PeriodTotals, type RequestRow, type SpendByKey } from './reads.js';

/**
 * Live state of one of a key's buckets, from the limiter. Amounts are in
 * bucket units (requests, tokens, or integer micro-USD for `usd`); an entry
 * whose `limitName` matches one of the key's limits is shown on that limit's
 * row, others (tenant, global) get rows of their own.
 */
export interface LimitSnapshotEntry {
  readonly limitName: string;
  readonly remaining: number;
  readonly burst: number;
  readonly unit: string;
}

/** The limiter's view of a key's buckets right now (absent: "not available"). */
export type LimitSnapshot = (keyId: string) => ReadonlyArray<LimitSnapshotEntry>;

/** A chart: x in Unix seconds, each series in its unit (micro-USD or a count). */
export interface ChartData {
  readonly x: number[];
  readonly series: ReadonlyArray<{ readonly label: string; readonly unit: 'usd' | 'count'; readonly values: number[] }>;
}

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

/** A row of the overview's top keys. */
export interface TopKeyItem {
  readonly id: string;
  readonly href: string;
  readonly name: string;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly costMonthMicros: number;
  readonly costTodayMicros: number;
  readonly requestsMonth: number;
  /** Share of the month's spend. */
  readonly share: number;
  readonly text: { readonly tenant: string; readonly spendMonth: string; readonly spendToday: string; readonly requestsMonth: string; readonly share: string };
}

/** The overview page and GET /admin/api/dashboard/overview. */
export interface OverviewView {
  readonly page: 'overview';
  readonly generatedAt: number;
  readonly today: string;
  readonly monthStart: string;
  /** Equal to `tollgate spend --since today` and `--since month` totals. */
  readonly totals: { readonly today: PeriodTotals; readonly month: PeriodTotals };
  readonly text: Readonly<Record<OverviewText, string>>;
  readonly topKeys: readonly TopKeyItem[];
  readonly budgets: readonly BudgetItem[];
  readonly charts: { readonly hourly: ChartData; readonly daily: ChartData };
}

type OverviewText =
  | 'spendToday'
  | 'spendMonth'
  | 'requestsToday'
  | 'requestsMonth'
  | 'tokensToday'
  | 'tokensMonth'
  | 'rateLimitedToday'
  | 'overBudgetToday'
  | 'rateLimitedMonth'
  | 'overBudgetMonth'
  | 'errorsToday'
  | 'pending'
  | 'budgetsOver'
  | 'updated';

/** Columns the keys table sorts by. */
export const SORT_KEYS = ['name', 'tenant', 'status', 'today', 'month', 'requests', 'budget', 'last_used'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
/** Statuses the keys table filters by. */
export const STATUS_FILTERS = ['active', 'expired', 'revoked'] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number];
/** Keys per page of the keys table. */
export const PAGE_SIZE = 50;

/** The keys table's filters, sort and page (normalised). */
export interface KeysQuery {
  /** A tenant id, `-` for keys without a tenant, or absent for all. */
  readonly tenant: string | undefined;
  readonly status: StatusFilter | undefined;
  /** Case-insensitive text in the name or prefix. */
  readonly q: string | undefined;
  readonly sort: SortKey;
  readonly dir: 'asc' | 'desc';
  readonly page: number;
}

/** A row of the keys table. */
export interface KeyRowItem {
  readonly id: string;
  readonly href: string;
  readonly name: string;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly status: KeyStatus;
  readonly costTodayMicros: number;
  readonly costMonthMicros: number;
  readonly requestsMonth: number;
  readonly lastUsedAt: number | null;
  readonly budget: BudgetItem | null;
  /** The meter's value (0 without a budget). */
  readonly budgetMeter: number;
  readonly budgetLevel: Level | 'none';
  readonly text: {
    readonly tenant: string;
    readonly limits: string;
    readonly budget: string;
    readonly budgetPercent: string;
    readonly spendToday: string;
    readonly spendMonth: string;
    readonly requestsMonth: string;
    readonly lastUsed: string;
    readonly lastUsedAt: string;
  };
}

/** The keys table and GET /admin/api/dashboard/keys. */
export interface KeysView {
  readonly page: 'keys';
  readonly generatedAt: number;
  readonly query: KeysQuery;
  /** Keys matching the filters. */
  readonly matching: number;
  readonly pages: number;
  readonly rows: readonly KeyRowItem[];
  readonly tenants: ReadonlyArray<{ readonly id: string; readonly name: string }>;
  readonly text: { readonly showing: string; readonly updated: string };
}

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

/** A ledger row as the key page lists it. */
export interface RequestItem {
  readonly requestId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly endpoint: string;
  readonly status: string;
  readonly httpStatus: number | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
  readonly latencyMs: number | null;
  readonly errorCode: string | null;
  /** ok | pending | error | rejected: the outcome cell's colour. */
  readonly tone: 'ok' | 'pending' | 'error' | 'rejected';
  readonly text: { readonly when: string; readonly at: string; readonly tokens: string; readonly cost: string; readonly latency: string; readonly outcome: string; readonly endpoint: string };
}

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
  };
  readonly totals: { readonly today: PeriodTotals; readonly month: PeriodTotals };
  readonly budget: BudgetItem | null;
  readonly limits: readonly LimitItem[];
  /** False when no limiter snapshot is wired in. */
  readonly limitsLive: boolean;
  readonly models: readonly ModelItem[];
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
  | 'updated';

/** What the views need besides the reads. */
export interface ViewContext {
  readonly reads: DashboardReads;
  readonly now: number;
  readonly limitSnapshot?: LimitSnapshot | undefined;
}

const LATEST_ROWS = 50;
const RECENT_429_ROWS = 20;
const TOP_KEYS = 10;
const TOP_BUDGETS = 12;

/** The link to a key's page. */
export function keyHref(id: string): string {
  return `/dashboard/keys/${encodeURIComponent(id)}`;
}

function tokensOf(totals: SpendTotals): number {
  return totals.promptTokens + totals.completionTokens;
}

function levelOf(fraction: number): Level {
  return fraction >= 1 ? 'over' : fraction >= 0.8 ? 'warn' : 'ok';
}

const PERIOD_TEXT: Record<BudgetPeriod, string> = { day: 'per day', month: 'per month', total: 'in total' };

function budgetItem(owner: 'key' | 'tenant', id: string, name: string, href: string, budget: Budget, spentMicros: number): BudgetItem {
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
    text: { owner: owner === 'key' ? 'key' : 'tenant', spent: usd(spentMicros), cap: usd(budget.microUsd), percent: percent(fraction), period: PERIOD_TEXT[budget.period] },
  };
}

/** What a key (or a tenant, summing its keys) has spent in its budget's period. */
function spentInBudgetPeriod(ctx: ViewContext, spend: SpendByKey, keyIds: readonly string[], period: BudgetPeriod): number {
  let total = 0;
  for (const id of keyIds) {
    if (period === 'day') total += spend.todayByKey.get(id)?.costMicros ?? 0;
    else if (period === 'month') total += spend.monthByKey.get(id)?.costMicros ?? 0;
    else total += ctx.reads.lifetimeSpent(id, spend, ctx.now);
  }
  return total;
}

function keyBudget(ctx: ViewContext, spend: SpendByKey, key: KeyRecord): BudgetItem | null {
  const budget = key.policy?.budget;
  if (budget === undefined) return null;
  return budgetItem('key', key.id, key.name, keyHref(key.id), budget, spentInBudgetPeriod(ctx, spend, [key.id], budget.period));
}

function inFlightText(pending: number): string {
  if (pending === 0) return 'no requests in flight';
  return pending === 1 ? '1 request in flight, at its estimate' : `${count(pending)} requests in flight, at their estimate`;
}

function updatedText(now: number): string {
  return `updated ${timestamp(now).slice(11)}`;
}

function chartOfHours(points: readonly HourPoint[], series: ReadonlyArray<'spend' | 'requests' | 'tokens' | 'rejected'>): ChartData {
  return {
    x: points.map((p) => p.hour / 1000),
    series: series.map((name) => {
      switch (name) {
        case 'spend':
          return { label: 'Spend', unit: 'usd' as const, values: points.map((p) => p.costMicros) };
        case 'requests':
          return { label: 'Requests', unit: 'count' as const, values: points.map((p) => p.requests) };
        case 'tokens':
          return { label: 'Tokens', unit: 'count' as const, values: points.map((p) => p.promptTokens + p.completionTokens) };
        case 'rejected':
          return { label: 'Rejected (429)', unit: 'count' as const, values: points.map((p) => p.rejectedRateLimit + p.rejectedBudget) };
      }
    }),
  };
}

function chartOfDays(points: readonly DayPoint[], series: ReadonlyArray<'spend' | 'requests' | 'tokens'>): ChartData {
  return {
    x: points.map((p) => Date.parse(`${p.day}T00:00:00Z`) / 1000),
    series: series.map((name) => {
      switch (name) {
        case 'spend':
          return { label: 'Spend', unit: 'usd' as const, values: points.map((p) => p.totals.costMicros) };
        case 'requests':
          return { label: 'Requests', unit: 'count' as const, values: points.map((p) => p.totals.requests) };
        case 'tokens':
          return { label: 'Tokens', unit: 'count' as const, values: points.map((p) => tokensOf(p.totals)) };
      }
    }),
  };
}

/** The overview: today and this month over every key. */
export function buildOverview(ctx: ViewContext): OverviewView {
  const { reads, now } = ctx;
  const directory = reads.directory();
  const spend = reads.spendByKey(now);
  const { todayTotal: today, monthTotal: month } = spend;

  const top = [...spend.monthByKey.entries()].sort((a, b) => b[1].costMicros - a[1].costMicros || a[0].localeCompare(b[0])).slice(0, TOP_KEYS);
  const topKeys: TopKeyItem[] = [];
  for (const [id, totals] of top) {
    const key = directory.keysById.get(id);
    if (key === undefined) continue;
    const costToday = spend.todayByKey.get(id)?.costMicros ?? 0;
    const share = month.costMicros > 0 ? totals.costMicros / month.costMicros : 0;
    topKeys.push({
      id,
      href: keyHref(id),
      name: key.name,
      tenant: key.tenant,
      prefix: key.prefix,
      costMonthMicros: totals.costMicros,
      costTodayMicros: costToday,
      requestsMonth: totals.requests,
      share,
      text: { tenant: key.tenant ?? '-', spendMonth: usd(totals.costMicros), spendToday: usd(costToday), requestsMonth: count(totals.requests), share: percent(share) },
    });
  }

  // Budgets of live keys and of tenants (a tenant's spend is its keys' spend).
  const budgets: BudgetItem[] = [];
  for (const key of directory.keys) {
    if (key.revokedAt !== null) continue;
    const item = keyBudget(ctx, spend, key);
    if (item !== null) budgets.push(item);
  }
  for (const tenant of directory.tenants) {
    const budget = tenant.policy?.budget;
    if (budget === undefined) continue;
    const keyIds = directory.keys.filter((key) => key.tenantId === tenant.id).map((key) => key.id);
    const href = `/dashboard/keys?tenant=${encodeURIComponent(tenant.id)}`;
    budgets.push(budgetItem('tenant', tenant.id, tenant.name, href, budget, spentInBudgetPeriod(ctx, spend, keyIds, budget.period)));
  }
  budgets.sort((a, b) => b.fraction - a.fraction || a.name.localeCompare(b.name));
  const over = budgets.filter((b) => b.level === 'over').length;

  return {
    page: 'overview',
    generatedAt: now,
    today: spend.today,
    monthStart: spend.monthStart,
    totals: { today, month },
    text: {
      spendToday: usd(today.costMicros),
      spendMonth: usd(month.costMicros),
      requestsToday: count(today.requests),
      requestsMonth: count(month.requests),
      tokensToday: count(tokensOf(today)),
      tokensMonth: count(tokensOf(month)),
      rateLimitedToday: count(today.rejectedRateLimit),
      overBudgetToday: count(today.rejectedBudget),
      rateLimitedMonth: count(month.rejectedRateLimit),
      overBudgetMonth: count(month.rejectedBudget),
      errorsToday: count(today.errors),
      pending: inFlightText(today.pending),
      budgetsOver: budgets.length === 0 ? 'no budgets set' : `${count(over)} of ${count(budgets.length)} over budget`,
      updated: updatedText(now),
    },
    topKeys,
    budgets: budgets.slice(0, TOP_BUDGETS),
    charts: {
      hourly: chartOfHours(reads.hourlySeries(now), ['spend', 'requests', 'rejected']),
      daily: chartOfDays(reads.dailySeries(spend, now), ['spend', 'requests']),
    },
  };
}

type QueryInput = Readonly<Record<string, string | undefined>>;

/**
 * Reads the keys table's query string. Pages fall back to defaults on a bad
 * value (`strict: false`); the JSON API says what is wrong (`strict: true`).
 */
export function parseKeysQuery(input: QueryInput, strict: boolean): KeysQuery {
  const bad = (param: string, message: string): undefined => {
    if (strict) throw new TollgateError('invalid_value', message, { param });
    return undefined;
  };
  const pick = <T extends string>(param: string, allowed: readonly T[]): T | undefined => {
    const value = input[param];
    if (value === undefined || value === '') return undefined;
    return (allowed as readonly string[]).includes(value) ? (value as T) : bad(param, `${param} must be one of ${allowed.join(', ')}`);
  };
  const sort = pick('sort', SORT_KEYS) ?? 'month';
  const defaultDir = sort === 'name' || sort === 'tenant' || sort === 'status' ? 'asc' : 'desc';
  const dir = pick('dir', ['asc', 'desc'] as const) ?? defaultDir;
  const pageText = input.page;
  let page = 1;
  if (pageText !== undefined && pageText !== '') {
    const parsed = Number(pageText);
    if (Number.isSafeInteger(parsed) && parsed >= 1) page = parsed;
    else bad('page', 'page must be a whole number from 1');
  }
  const q = input.q?.trim().slice(0, 100);
  const tenant = input.tenant === undefined || input.tenant === '' ? undefined : input.tenant;
  return { tenant, status: pick('status', STATUS_FILTERS), q: q === undefined || q === '' ? undefined : q, sort, dir, page };
}

/** The query string for a keys-table link, leaving out defaults. */
export function keysQueryString(query: KeysQuery, change: Partial<KeysQuery> = {}): string {
  const next = { ...query, ...change };
  const params = new URLSearchParams();
  if (next.tenant !== undefined) params.set('tenant', next.tenant);
  if (next.status !== undefined) params.set('status', next.status);
  if (next.q !== undefined) params.set('q', next.q);
  if (next.sort !== 'month') params.set('sort', next.sort);
  const defaultDir = next.sort === 'name' || next.sort === 'tenant' || next.sort === 'status' ? 'asc' : 'desc';
  if (next.dir !== defaultDir) params.set('dir', next.dir);
  if (next.page !== 1) params.set('page', String(next.page));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

const STATUS_ORDER: Record<KeyStatus, number> = { active: 0, expired: 1, revoked: 2 };

/** The keys table: filter, sort and one page, with each key's spend. */
export function buildKeys(ctx: ViewContext, query: KeysQuery): KeysView {
  const { reads, now } = ctx;
  const directory = reads.directory();
  const spend = reads.spendByKey(now);
  const tenantFilter = query.tenant === undefined ? undefined : query.tenant === '-' ? null : (directory.tenantsById.get(query.tenant) ?? directory.tenants.find((t) => t.name === query.tenant))?.id;
  const needle = query.q?.toLowerCase();
  const keys = directory.keys.filter((key) => {
    if (query.tenant !== undefined && key.tenantId !== (tenantFilter === undefined ? '\u0000no such tenant' : tenantFilter)) return false;
    if (query.status !== undefined && keyStatusOf(key, now) !== query.status) return false;
    if (needle !== undefined && !key.name.toLowerCase().includes(needle) && !key.prefix.toLowerCase().includes(needle)) return false;
    return true;
  });

  // Budgets and last use only where the sort needs them for every key; otherwise for the page's keys.
  const budgets = new Map<string, BudgetItem | null>();
  const budgetOf = (key: KeyRecord): BudgetItem | null => {
    if (!budgets.has(key.id)) budgets.set(key.id, keyBudget(ctx, spend, key));
    return budgets.get(key.id)!;
  };
  const lastUsed = query.sort === 'last_used' ? reads.lastUsed(keys.map((key) => key.id)) : new Map<string, number | null>();
  const month = (key: KeyRecord) => spend.monthByKey.get(key.id);
  const sortValue = (key: KeyRecord): number | string => {
    switch (query.sort) {
      case 'name':
        return key.name.toLowerCase();
      case 'tenant':
        return (key.tenant ?? '\uffff').toLowerCase();
      case 'status':
        return STATUS_ORDER[keyStatusOf(key, now)];
      case 'today':
        return spend.todayByKey.get(key.id)?.costMicros ?? 0;
      case 'month':
        return month(key)?.costMicros ?? 0;
      case 'requests':
        return month(key)?.requests ?? 0;
      case 'budget':
        return budgetOf(key)?.fraction ?? -1;
      case 'last_used':
        return lastUsed.get(key.id) ?? -1;
    }
  };
  const sign = query.dir === 'asc' ? 1 : -1;
  const decorated = keys.map((key) => ({ key, value: sortValue(key) }));
  decorated.sort((a, b) => {
    const order = a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
    return order * sign || a.key.name.localeCompare(b.key.name) || a.key.id.localeCompare(b.key.id);
  });

  const pages = Math.max(1, Math.ceil(decorated.length / PAGE_SIZE));
  const page = Math.min(query.page, pages);
  const slice = decorated.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((entry) => entry.key);
  const pageLastUsed = query.sort === 'last_used' ? lastUsed : reads.lastUsed(slice.map((key) => key.id));
  const rows = slice.map((key): KeyRowItem => {
    const today = spend.todayByKey.get(key.id);
    const monthTotals = month(key);
    const budget = budgetOf(key);
    const at = pageLastUsed.get(key.id) ?? null;
    return {
      id: key.id,
      href: keyHref(key.id),
      name: key.name,
      tenant: key.tenant,
      prefix: key.prefix,
      status: keyStatusOf(key, now),
      costTodayMicros: today?.costMicros ?? 0,
      costMonthMicros: monthTotals?.costMicros ?? 0,
      requestsMonth: monthTotals?.requests ?? 0,
      lastUsedAt: at,
      budget,
      budgetMeter: budget?.meter ?? 0,
      budgetLevel: budget?.level ?? 'none',
      text: {
        tenant: key.tenant ?? '-',
        limits: key.policy === undefined ? 'invalid policy' : key.policy.limits.length === 0 ? 'none' : key.policy.limits.map(formatLimit).join(', '),
        budget: budget === null ? 'none' : `${budget.text.spent} of ${budget.text.cap} ${budget.text.period}`,
        budgetPercent: budget === null ? '' : budget.text.percent,
        spendToday: usd(today?.costMicros ?? 0),
        spendMonth: usd(monthTotals?.costMicros ?? 0),
        requestsMonth: count(monthTotals?.requests ?? 0),
        lastUsed: relativeTime(at, now),
        lastUsedAt: timestamp(at),
      },
    };
  });
  const first = decorated.length === 0 ? 0 : (page - 1) * PAGE_SIZE + 1;
  return {
    page: 'keys',
    generatedAt: now,
    query: { ...query, page },
    matching: decorated.length,
    pages,
    rows,
    tenants: directory.tenants.map((t) => ({ id: t.id, name: t.name })),
    text: {
      showing: decorated.length === 0 ? 'No keys match.' : `Showing ${count(first)}–${count(first + rows.length - 1)} of ${count(decorated.length)} keys`,
      updated: updatedText(now),
    },
  };
}

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
        live: entry === undefined ? 'not available' : `${formatAmount(entry.unit, Math.max(0, entry.remaining))} of ${formatAmount(entry.unit, entry.burst)}${entry.unit === 'usd' ? '' : ` ${entry.unit}`} left (${percent(fraction ?? 0)})`,
      },
    };
  };
  const items = limits.map((limit) => item(limit.name, formatLimit(limit), snapshot === undefined ? undefined : live.get(limit.name)));
  // Buckets the limiter reports beyond the key's own (its tenant's, the global one).
  for (const entry of snapshot ?? []) {
    if (!limits.some((limit) => limit.name === entry.limitName)) items.push(item(entry.limitName, `${entry.unit}, burst ${formatAmount(entry.unit, entry.burst)}`, entry));
  }
  return items;
}

function toneOf(row: RequestRow): RequestItem['tone'] {
  if (row.status === 'ok') return 'ok';
  if (row.status === 'pending') return 'pending';
  if (row.status === 'rejected' || row.httpStatus === 429) return 'rejected';
  return 'error';
}

function outcomeText(row: RequestRow): string {
  const detail = row.errorCode ?? (row.httpStatus !== null && row.httpStatus !== 200 ? `HTTP ${row.httpStatus}` : undefined);
  return detail === undefined ? row.status : `${row.status} · ${detail}`;
}

function requestItem(row: RequestRow, now: number): RequestItem {
  const pending = row.status === 'pending';
  return {
    requestId: row.requestId,
    createdAt: row.createdAt,
    model: row.model,
    endpoint: row.endpoint,
    status: row.status,
    httpStatus: row.httpStatus,
    promptTokens: row.promptTokens,
    completionTokens: row.completionTokens,
    costMicros: row.costMicros,
    latencyMs: row.latencyMs,
    errorCode: row.errorCode,
    tone: toneOf(row),
    text: {
      when: relativeTime(row.createdAt, now),
      at: timestamp(row.createdAt),
      tokens: `${count(row.promptTokens)} → ${count(row.completionTokens)}${pending ? ' (est.)' : ''}`,
      cost: `${usd(row.costMicros)}${pending ? ' (est.)' : ''}`,
      latency: duration(row.latencyMs),
      outcome: outcomeText(row),
      endpoint: row.stream ? `${row.endpoint}, stream` : row.endpoint,
    },
  };
}

/** One key's page, or undefined when there is no such key. */
export function buildKeyPage(ctx: ViewContext, keyId: string): KeyPageView | undefined {
  const { reads, now } = ctx;
  const directory = reads.directory();
  const key = directory.keysById.get(keyId);
  if (key === undefined) return undefined;
  const { today: todayDay, monthStart } = periodDays(now);
  const today = reads.keyTotals(key.id, todayDay, now);
  const month = reads.keyTotals(key.id, monthStart, now);
  const models = reads.keyModels(key.id, monthStart, now).map(({ model, totals }): ModelItem => {
    const share = month.costMicros > 0 ? totals.costMicros / month.costMicros : 0;
    return {
      model,
      totals,
      share,
      text: { requests: count(totals.requests), tokens: `${count(totals.promptTokens)} → ${count(totals.completionTokens)}`, spend: usd(totals.costMicros), share: percent(share) },
    };
  });
  const budgetSpec = key.policy?.budget;
  let budget: BudgetItem | null = null;
  if (budgetSpec !== undefined) {
    const spent = budgetSpec.period === 'day' ? today.costMicros : budgetSpec.period === 'month' ? month.costMicros : reads.keyTotals(key.id, '0000-01-01', now).costMicros;
    budget = budgetItem('key', key.id, key.name, keyHref(key.id), budgetSpec, spent);
  }
  const latest = reads.latestRequests(key.id, LATEST_ROWS).map((row) => requestItem(row, now));
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
    },
    totals: { today, month },
    budget,
    limits: limitItems(key, snapshot),
    limitsLive: ctx.limitSnapshot !== undefined,
    models,
    latest,
    recent429: reads.recent429s(key.id, RECENT_429_ROWS).map((row) => requestItem(row, now)),
    charts: {
      hourly: chartOfHours(reads.hourlySeries(now, key.id), ['spend', 'tokens']),
      daily: chartOfDays(reads.keyDailySeries(key.id, now), ['spend', 'tokens']),
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
      updated: updatedText(now),
    },
  };
}
