/**
 * Budgets on a replica: what a key or tenant has spent across every node.
 *
 *   spent = PostgreSQL's rollups, as of a query started at T (every node's
 *           shipped rows; refreshed in the background, at most every
 *           `refreshMs`, never awaited on the request path)
 *         + what this node shipped after T (the shipper reports each batch)
 *         + what this node recorded and has not shipped yet (its outbox)
 *
 * and the SpendTracker (spend-tracker.ts) adds what this node commits and
 * queues after that. This node's own spend is therefore exact; a batch
 * shipped while the query ran may count twice until the next refresh (the
 * safe side). What another node spent reaches this one once that node has
 * shipped it and this one has refreshed: the bound (README "Running
 * replicas") is each other node's spend over its shipping lag plus
 * `refreshMs`. While PostgreSQL is unreachable, the last answer stands and
 * only this node's own spend moves it.
 *
 * A scope seen for the first time takes its answer from the last snapshot
 * of every key's and tenant's spend (`loadAll`, at start and every few
 * seconds), so the first request of a key on a node — the one that seeds a
 * shared Redis counter — already counts the other nodes. Before the first
 * snapshot the tracker falls back to this node's own rollups.
 */
import type Database from 'better-sqlite3';
import type { TollgateDatabase } from '../sqlite/open.js';
import type { PgPool } from './open.js';
import { calendarDay, dayEndMs, dayStartMs, periodStart, type BudgetPeriod } from '../../domain/calendar.js';
import { enableOutbox } from '../sqlite/outbox.js';
import { isAttributed, type BudgetScope, type SpendAcrossNodes, type SpendChange, type SpendRead } from '../ledger.js';
import { ROW_SPEND_SQL, sessionReadRange } from '../session-spend.js';

interface Known {
  value: number;
  /** When the query behind `value` started. */
  queriedAt: number;
  refreshing: boolean;
}

interface Shipped {
  readonly at: number;
  readonly change: SpendChange;
}

export interface PostgresSpendOptions {
  readonly refreshMs?: number;
  readonly now?: () => number;
  readonly onError?: (error: unknown) => void;
  /** Reads kept at most (end users can be very many; the least recently added go first and are simply read again). */
  readonly maxKnown?: number;
}

export class PostgresSpendSource implements SpendAcrossNodes {
  private readonly pool: PgPool;
  private readonly refreshMs: number;
  private readonly now: () => number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly known = new Map<string, Known>();
  /** When the last snapshot of every scope started, per period·start: a scope missing from it had spent nothing. */
  private readonly snapshots = new Map<string, number>();
  /** Batches shipped recently (older than every query in `known` are dropped). */
  private shipped: Shipped[] = [];
  private readonly unshipped: Readonly<Record<BudgetScope['level'], Database.Statement>>;
  private readonly maxKnown: number;

  constructor(pool: PgPool, database: TollgateDatabase, options: PostgresSpendOptions = {}) {
    this.pool = pool;
    this.refreshMs = options.refreshMs ?? 1000;
    this.now = options.now ?? Date.now;
    this.onError = options.onError;
    this.maxKnown = options.maxKnown ?? 100_000;
    enableOutbox(database);
    // The outbox's rows of a scope: a new row PostgreSQL lacks whole; a settlement it holds at its estimate.
    const of = (where: string) =>
      database.sqlite.prepare(
        `SELECT coalesce(sum(CASE WHEN o.is_new = 1 THEN (CASE WHEN l.status = 'pending' THEN l.est_cost_micros ELSE coalesce(l.cost_micros, 0) END)
                                  WHEN l.status = 'pending' THEN 0 ELSE coalesce(l.cost_micros, 0) - l.est_cost_micros END), 0) AS spent
         FROM (SELECT request_id, max(is_new) AS is_new FROM ledger_outbox GROUP BY request_id) AS o
         JOIN ledger AS l ON l.request_id = o.request_id
         WHERE ${where} AND l.created_at >= @from AND l.created_at < @to`,
      );
    this.unshipped = {
      key: of('l.key_id = @id'),
      tenant: of('l.tenant_id = @id'),
      user: of('l.key_id = @keyId AND l.end_user = @name'),
      // Tags are comma-joined and hold no commas (src/endusers/attribution.ts).
      tag: of(`l.key_id = @keyId AND instr(',' || l.tags || ',', ',' || @name || ',') > 0`),
      session: of('l.key_id = @keyId AND l.session = @name'),
    };
  }

  /**
   * Every key's and tenant's spend in the current day, month and in total, in
   * three queries: the answer for scopes not read yet.
   */
  async loadAll(): Promise<void> {
    const startedAt = this.now();
    const today = calendarDay(startedAt);
    const month = periodStart('month', startedAt);
    const byKeyAndTenant = (table: string, where: string) =>
      `SELECT 'key' AS level, r.key_id AS id, sum(r.cost_micros) AS spent FROM ${table} r WHERE ${where} GROUP BY r.key_id
       UNION ALL
       SELECT 'tenant', k.tenant_id, sum(r.cost_micros) FROM ${table} r JOIN api_keys k ON k.id = r.key_id WHERE k.tenant_id IS NOT NULL AND ${where} GROUP BY k.tenant_id`;
    const reads: Array<[BudgetPeriod, string, string, unknown[]]> = [
      ['day', today, byKeyAndTenant('rollups_daily', 'r.day = $1'), [today]],
      ['month', month, byKeyAndTenant('rollups_monthly', 'r.month = $1'), [month.slice(0, 7)]],
      ['total', periodStart('total', startedAt), byKeyAndTenant('rollups_lifetime', 'true'), []],
    ];
    for (const [period, since, text, values] of reads) {
      const rows = (await this.pool.query<{ level: 'key' | 'tenant'; id: string; spent: number }>(text, values)).rows;
      this.snapshots.set(`${period}|${since}`, startedAt);
      for (const row of rows) {
        const id = `${row.level}:${row.id}|${period}|${since}`;
        const known = this.known.get(id);
        if (known === undefined) this.known.set(id, { value: row.spent, queriedAt: startedAt, refreshing: false });
        else if (!known.refreshing && known.queriedAt < startedAt) {
          known.value = row.spent;
          known.queriedAt = startedAt;
        }
      }
    }
  }

  /** The shipper committed a batch to PostgreSQL. */
  shippedBatch(changes: readonly SpendChange[]): void {
    const at = this.now();
    for (const change of changes) this.shipped.push({ at, change });
  }

  /** The spend of `scope` over the UTC days [since, until] across every node, or undefined when PostgreSQL has not answered yet. */
  read(scope: BudgetScope, period: BudgetPeriod, read: SpendRead): number | undefined {
    const id = `${scope.level}:${scope.id}|${period}|${read.since}`;
    const now = this.now();
    let known = this.known.get(id);
    if (known === undefined) {
      // The snapshot holds keys and tenants only: an end user or tag not read yet is unknown until its own query answers.
      const snapshot = isAttributed(scope) ? undefined : this.snapshots.get(`${period}|${read.since}`);
      known = { value: 0, queriedAt: snapshot ?? -1, refreshing: false };
      this.known.set(id, known);
      if (this.known.size > this.maxKnown) this.known.delete(this.known.keys().next().value!);
    }
    if (!known.refreshing && (known.queriedAt < 0 || now - known.queriedAt >= this.refreshMs)) void this.refresh(known, scope, period, read);
    if (known.queriedAt < 0) return undefined;
    // 'total' starts at '0000-00-00', which is no date.
    const from = period === 'total' ? 0 : dayStartMs(read.since);
    const to = dayEndMs(read.until);
    const local = this.unshippedOf(scope, from, to);
    let since = 0;
    for (const { at, change } of this.shipped) {
      if (at < known.queriedAt || change.day < read.since || change.day > read.until) continue;
      if (changes(change, scope)) since += change.microUsd;
    }
    return known.value + since + local;
  }

  /**
   * Every node's spend of `scope` in the period containing `now`, read from
   * PostgreSQL now, plus this node's unshipped rows: what seeds a new shared
   * budget counter (once per period and owner, never per request).
   */
  async exact(scope: BudgetScope, period: BudgetPeriod, now: number): Promise<number> {
    const read: SpendRead = { since: periodStart(period, now), until: calendarDay(now) };
    const query = spentQuery(scope, period, read);
    const shipped = (await this.pool.query<{ spent: number }>(query.text, query.values)).rows[0]?.spent ?? 0;
    const from = period === 'total' ? 0 : dayStartMs(read.since);
    return Number(shipped) + this.unshippedOf(scope, from, dayEndMs(read.until));
  }

  /** What this node recorded for `scope` in [from, to) and has not shipped. */
  private unshippedOf(scope: BudgetScope, from: number, to: number): number {
    const params = isAttributed(scope) ? { keyId: scope.keyId, name: scope.name, from, to } : { id: scope.id, from, to };
    return (this.unshipped[scope.level].get(params) as { spent: number }).spent;
  }

  private async refresh(known: Known, scope: BudgetScope, period: BudgetPeriod, read: SpendRead): Promise<void> {
    known.refreshing = true;
    const startedAt = this.now();
    try {
      const query = spentQuery(scope, period, read);
      const result = await this.pool.query<{ spent: number }>(query.text, query.values);
      known.value = result.rows[0]?.spent ?? 0;
      known.queriedAt = startedAt;
      this.forgetShipped();
    } catch (error) {
      this.onError?.(error);
    } finally {
      known.refreshing = false;
    }
  }

  /** Batches older than the oldest answer still in use count nowhere any more. */
  private forgetShipped(): void {
    let oldest = Number.POSITIVE_INFINITY;
    for (const known of this.known.values()) if (known.queriedAt >= 0) oldest = Math.min(oldest, known.queriedAt);
    if (this.shipped.length > 0 && this.shipped[0]!.at < oldest) this.shipped = this.shipped.filter((s) => s.at >= oldest);
  }
}

/** The same reads as the node's own (sqlite/budget-spend.ts): the rollup that holds the period whole, less days filed after today. */
function spentQuery(scope: BudgetScope, period: BudgetPeriod, read: SpendRead): { text: string; values: unknown[] } {
  if (scope.level === 'session') {
    // A session's own rows, as the SQLite tracker reads them (src/storage/session-spend.ts).
    const { from, to } = sessionReadRange(read);
    return {
      text: `SELECT coalesce(sum(${ROW_SPEND_SQL}), 0) AS spent FROM ledger AS l WHERE l.key_id = $1 AND l.session = $2 AND l.created_at >= $3 AND l.created_at < $4`,
      values: [scope.keyId, scope.name, from, to],
    };
  }
  if (isAttributed(scope)) {
    // An end user's or tag's own daily rollup, as the SQLite tracker reads it ('total' starts at '0000-00-00').
    const [table, column] = scope.level === 'user' ? ['rollups_end_users', 'end_user'] : ['rollups_tags', 'tag'];
    return {
      text: `SELECT coalesce(sum(cost_micros), 0) AS spent FROM ${table} WHERE key_id = $1 AND ${column} = $2 AND day >= $3 AND day <= $4`,
      values: [scope.keyId, scope.name, read.since, read.until],
    };
  }
  const of = (table: string, where: string) =>
    scope.level === 'key'
      ? `SELECT coalesce(sum(cost_micros), 0) FROM ${table} WHERE key_id = $1 AND ${where}`
      : `SELECT coalesce(sum(r.cost_micros), 0) FROM ${table} r JOIN api_keys k ON k.id = r.key_id WHERE k.tenant_id = $1 AND ${where}`;
  if (period === 'day' || period === 'week')
    return { text: `SELECT (${of('rollups_daily', 'day >= $2 AND day <= $3')}) AS spent`, values: [scope.id, read.since, read.until] };
  if (period === 'month') {
    return {
      text: `SELECT (${of('rollups_monthly', 'month = $2')}) - (${of('rollups_daily', 'day > $3 AND day < $4')}) AS spent`,
      values: [scope.id, read.since.slice(0, 7), read.until, `${read.since.slice(0, 7)}-99`],
    };
  }
  return { text: `SELECT (${of('rollups_lifetime', 'true')}) - (${of('rollups_daily', 'day > $2')}) AS spent`, values: [scope.id, read.until] };
}

/** Whether a shipped change moved `scope`'s spend. */
function changes(change: SpendChange, scope: BudgetScope): boolean {
  switch (scope.level) {
    case 'key':
      return change.keyId === scope.id;
    case 'tenant':
      return change.tenantId === scope.id;
    case 'user':
      return change.keyId === scope.keyId && change.endUser === scope.name;
    case 'tag':
      return change.keyId === scope.keyId && (change.tags ?? []).includes(scope.name);
    case 'session':
      return change.keyId === scope.keyId && change.session === scope.name;
  }
}
