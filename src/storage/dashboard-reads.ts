/**
 * What the dashboard reads (its pages and their JSON under
 * /admin/api/dashboard), whichever database holds the rollups. Nothing scans
 * the ledger and nothing is summed ahead of time in memory: every number is
 * read from a rollup the ledger writer keeps in the same transaction as the
 * rows, so each read costs about the same on the first request of a process
 * as on the thousandth (sqlite/dashboard-reads.ts says which rollup each
 * figure comes from).
 *
 * SQLite: one host's file, on the read worker in the proxy (never on the
 * event loop the requests share: sqlite/read-worker.ts). PostgreSQL: every
 * node's shipped rows, so every node's dashboard shows the whole cluster.
 * Both give the same figures for the same rows
 * (test/integration/storage/dashboard-reads.contract.test.ts).
 */
import type { Directory } from './directory.js';
import type { SpendTotals } from './spend-reads.js';

/** Spend totals plus the requests still in flight (counted at their estimate). */
export interface PeriodTotals extends SpendTotals {
  readonly pending: number;
}

/** What the pages show of a key's month: its cost and requests. */
export interface KeySpend {
  readonly requests: number;
  readonly costMicros: number;
}

/** Spend of every key for today, the month to date and its lifetime. */
export interface SpendByKey {
  readonly today: string;
  readonly monthStart: string;
  readonly todayTotal: PeriodTotals;
  readonly monthTotal: PeriodTotals;
  readonly todayByKey: ReadonlyMap<string, SpendTotals>;
  /** Keys with rollup rows this month (as `spend --by key` lists them). */
  readonly monthByKey: ReadonlyMap<string, KeySpend>;
  /** Cost of every key in this ISO week to date (budgets "per week"). */
  readonly weekCostByKey: ReadonlyMap<string, number>;
  /** Cost of every key from its first request to today (budgets "in total"). */
  readonly lifetimeCostByKey: ReadonlyMap<string, number>;
  /** When each key last made a request, served or refused (absent: never). */
  readonly lastRequestAtByKey: ReadonlyMap<string, number>;
}

/** One UTC day of a chart. */
export interface DayPoint {
  readonly day: string;
  readonly totals: SpendTotals;
}

/** One UTC hour of a chart, from the hourly rollups. */
export interface HourPoint {
  readonly hour: number;
  readonly requests: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
  readonly rejectedRateLimit: number;
  readonly rejectedBudget: number;
}

/** One ledger row as the key page lists it. */
export interface RequestRow {
  readonly requestId: string;
  readonly createdAt: number;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: boolean;
  readonly status: string;
  readonly httpStatus: number | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Actual cost, or the estimate while pending. */
  readonly costMicros: number;
  readonly latencyMs: number | null;
  readonly errorCode: string | null;
}

/** One page of a list: its rows, and where the next page starts (`nextCursor`, when `hasMore`). */
export interface Page<T> {
  readonly rows: readonly T[];
  readonly hasMore: boolean;
  readonly nextCursor: string | null;
}

/** An end user or tag of a key with its spend. */
export interface TopRow {
  readonly name: string;
  readonly totals: SpendTotals;
  /** Sessions: their first and last request in the range (ms since the epoch). */
  readonly firstAt?: number;
  readonly lastAt?: number;
}

/** What the dashboard reads, from SQLite (one host) or PostgreSQL (replicas). */
export interface DashboardReads {
  /** Every key and tenant with parsed policies; re-read only when one of them changed. */
  directory(): Promise<Directory>;
  /** Spend of every key today, this month and in its lifetime, with the totals `tollgate spend` would print. */
  spendByKey(now: number): Promise<SpendByKey>;
  /** One key's cost from its first request to today (a budget "in total"). */
  keyLifetimeCost(keyId: string, now: number): Promise<number>;
  /** Spend per day over every key, the last 90 days (CHART_DAYS), oldest first. */
  dailySeries(now: number): Promise<DayPoint[]>;
  /** Spend per day of one key, the last 90 days (CHART_DAYS), oldest first. */
  keyDailySeries(keyId: string, now: number): Promise<DayPoint[]>;
  /** Spend per hour over every key (or one), the last 48 hours (CHART_HOURS). */
  hourlySeries(now: number, keyId?: string): Promise<HourPoint[]>;
  /** One key's totals from `since` to today (querySpend: the CLI's numbers). */
  keyTotals(keyId: string, since: string, now: number): Promise<PeriodTotals>;
  /** One tenant's totals over its keys from `since` to today, with its requests in flight (a tenant's dashboard session). */
  tenantTotals(tenantId: string, since: string, now: number): Promise<PeriodTotals>;
  /** Spend per day over one tenant's keys, the last 90 days (CHART_DAYS), oldest first. */
  tenantDailySeries(tenantId: string, now: number): Promise<DayPoint[]>;
  /** Spend per hour over one tenant's keys, the last 48 hours (CHART_HOURS). */
  tenantHourlySeries(tenantId: string, now: number): Promise<HourPoint[]>;
  /** One key's spend by model since `since`, most expensive first. */
  keyModels(keyId: string, since: string, now: number): Promise<Array<{ model: string; totals: SpendTotals }>>;
  /** A key's end users or tags since `since` (src/endusers), the most spent first: a page of at most `limit`, from `cursor` (spend-cursor.ts). */
  keyTop(keyId: string, by: 'user' | 'tag' | 'session', since: string, now: number, limit: number, cursor?: string): Promise<Page<TopRow>>;
  /** A key's ledger rows, newest first: a page of at most `limit`, from `cursor` (request-cursor.ts). */
  latestRequests(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>>;
  /** A key's 429 answers, newest first: a page of at most `limit`, from `cursor`. */
  recent429s(keyId: string, limit: number, cursor?: string): Promise<Page<RequestRow>>;
}

/**
 * The dashboard's reads of a backend. On SQLite with `readWorker` (the
 * proxy's) they are answered on that thread; without one (an in-memory
 * database, a test) here.
 */
