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
 * The database read (src/storage/sqlite/budget-spend.ts) takes the rollup that
 * holds the period whole, so it equals the sum of the days.
 *
 * End users and tags (src/endusers) are scopes too, within one key: their
 * reads sum their own daily rollups. There can be very many of them, so the
 * reads kept are bounded (`maxReads`, least recently refreshed dropped first:
 * a dropped read is simply read again), and a scope's queued amounts leave
 * memory after they are committed (swept once many scopes are held).
 */
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import { periodStart, calendarDay, type BudgetPeriod } from '../domain/calendar.js';
import { isAttributed, type BudgetScope, type SpendAcrossNodes, type SpendChange } from '../storage/ledger.js';
import { SqliteSpendReads } from '../storage/sqlite/budget-spend.js';

export { isAttributed, type AttributedScope, type BudgetScope, type SpendChange } from '../storage/ledger.js';

interface Cached {
  readonly value: number;
  readonly readAt: number;
}

type DayAmounts = Map<string, number>;

/** Most names {@link ScopeNames} keeps per level before it starts over. */
const MAX_SCOPE_NAMES = 100_000;

/**
 * The names of key and tenant scopes (`key:<id>`, `tenant:<id>`), each built once: a name built
 * afresh is a new string whose hash every Map lookup computes again, and each request looks its
 * scopes up a dozen times or more (docs/performance.md, "Values bound in column order"). An end
 * user's, tag's or session's name is built each time: those names are the tenant's to choose, and
 * many.
 */
class ScopeNames {
  private readonly keys = new Map<string, string>();
  private readonly tenants = new Map<string, string>();

  of(level: string, id: string): string {
    if (level !== 'key' && level !== 'tenant') return `${level}:${id}`;
    const names = level === 'key' ? this.keys : this.tenants;
    let name = names.get(id);
    if (name === undefined) {
      if (names.size >= MAX_SCOPE_NAMES) names.clear();
      name = `${level}:${id}`;
      names.set(id, name);
    }
    return name;
  }
}

/**
 * Adds `amount` to a scope's day. A scope's last day left at zero stays: a key's queued amount
 * returns to zero with every commit, and deleting its entries to add them again with the next
 * request made V8 shrink and grow both maps each time (docs/performance.md, "Slow paths the
 * profile named"). Scopes at zero leave in {@link sweepZeros}.
 */
function add(map: Map<string, DayAmounts>, scope: string, day: string, amount: number): void {
  if (amount === 0) return;
  let days = map.get(scope);
  if (days === undefined) {
    days = new Map();
    map.set(scope, days);
  }
  const next = (days.get(day) ?? 0) + amount;
  // Any other day back at zero goes (sums walk every day held): a scope holds one day at zero at most.
  if (next === 0 && days.size > 1) days.delete(day);
  else days.set(day, next);
}

/** Drops the scopes whose every day is at zero: end users come and go, and each leaves no trace past a sweep. */
function sweepZeros(map: Map<string, DayAmounts>): void {
  for (const [scope, days] of map) {
    let zero = true;
    for (const amount of days.values()) if (amount !== 0) zero = false;
    if (zero) map.delete(scope);
  }
}

/** Scopes held in the queued amounts before the first sweep of those at zero. */
const SWEEP_AT = 1024;

/** Reads kept at most, by default: far more than keys, tenants and active end users in a period. */
const MAX_READS = 100_000;

export class SpendTracker {
  private readonly refreshMs: number;
  /** Database reads, per scope·period·start. */
  private readonly cache = new Map<string, Cached>();
  /** What this process committed since each read (keyed like `cache`). */
  private readonly committedSinceRead = new Map<string, DayAmounts>();
  /** The reads open for each scope, so a commit can be added to all of them. */
  private readonly readsByScope = new Map<string, Set<string>>();
  /** Queued in the ledger writer, not committed yet, per scope (scopes back at zero kept until the next sweep). */
  private readonly queued = new Map<string, DayAmounts>();
  /** Scopes {@link SpendTracker.queued} may hold before scopes at zero are swept: twice those left by the last sweep, at least {@link SWEEP_AT}. */
  private sweepQueuedAt = SWEEP_AT;
  /** This node's own rollups: the answer until (or unless) spend across nodes has one. */
  private readonly local: SqliteSpendReads;
  private readonly source: SpendAcrossNodes | undefined;
  private readonly maxReads: number;
  private readonly names = new ScopeNames();
  /** The `cache` key of each scope's latest read of each period, kept while the period lasts (see {@link ScopeNames}). */
  private readonly readNames = new Map<string, Map<BudgetPeriod, { readonly since: string; readonly read: string }>>();

  constructor(database: TollgateDatabase, options: { refreshMs?: number; source?: SpendAcrossNodes; maxReads?: number } = {}) {
    this.refreshMs = options.refreshMs ?? 1000;
    this.source = options.source;
    this.maxReads = options.maxReads ?? MAX_READS;
    this.local = new SqliteSpendReads(database);
  }

  /** Reads held now (bounded by `maxReads`). */
  get reads(): number {
    return this.cache.size;
  }

  /** The ledger writer queued a change (synchronously, as the request is admitted or settled). */
  queuedChange(change: SpendChange): void {
    for (const scope of this.scopesOf(change)) add(this.queued, scope, change.day, change.microUsd);
    if (this.queued.size > this.sweepQueuedAt) {
      sweepZeros(this.queued);
      this.sweepQueuedAt = Math.max(SWEEP_AT, 2 * this.queued.size);
    }
  }

  /** Scopes held in the queued amounts, those back at zero included (bounded by the sweeps). */
  get queuedScopes(): number {
    return this.queued.size;
  }

  /** The most days one scope's queued amounts hold. */
  get queuedDaysMost(): number {
    let most = 0;
    for (const days of this.queued.values()) most = Math.max(most, days.size);
    return most;
  }

  /** The ledger writer committed a change it had queued. */
  committedChange(change: SpendChange): void {
    for (const scope of this.scopesOf(change)) {
      add(this.queued, scope, change.day, -change.microUsd);
      for (const read of this.readsByScope.get(scope) ?? []) add(this.committedSinceRead, read, change.day, change.microUsd);
    }
  }

  /** A queued change will never be committed (its `begin` failed and the request was refused). */
  droppedChange(change: SpendChange): void {
    for (const scope of this.scopesOf(change)) add(this.queued, scope, change.day, -change.microUsd);
  }

  /** Micro-USD spent by `scope` in the `period` containing `now`. */
  spent(scope: BudgetScope, period: BudgetPeriod, now: number): number {
    const since = periodStart(period, now);
    const until = calendarDay(now);
    const key = this.names.of(scope.level, scope.id);
    const read = this.readName(key, period, since);
    let cached = this.cache.get(read);
    if (cached === undefined || now - cached.readAt >= this.refreshMs || now < cached.readAt) {
      const value = this.readSpent(scope, period, since, until);
      cached = { value, readAt: now };
      // Most recently read last, so the oldest reads go first when there are too many.
      this.cache.delete(read);
      this.cache.set(read, cached);
      if (this.cache.size > this.maxReads) this.forget(this.cache.keys().next().value!);
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

  /** The `cache` key of `scope`'s read of `period` from `since`: `<scope>|<period>|<since>`. */
  private readName(scope: string, period: BudgetPeriod, since: string): string {
    let periods = this.readNames.get(scope);
    if (periods === undefined) {
      if (this.readNames.size >= this.maxReads) this.readNames.clear();
      periods = new Map();
      this.readNames.set(scope, periods);
    }
    const known = periods.get(period);
    if (known !== undefined && known.since === since) return known.read;
    const read = `${scope}|${period}|${since}`;
    periods.set(period, { since, read });
    return read;
  }

  private scopesOf(change: SpendChange): string[] {
    const scopes = [this.names.of('key', change.keyId)];
    if (change.tenantId !== null) scopes.push(this.names.of('tenant', change.tenantId));
    if (change.endUser !== undefined && change.endUser !== null) scopes.push(`user:${change.keyId}:${change.endUser}`);
    for (const tag of change.tags ?? []) scopes.push(`tag:${change.keyId}:${tag}`);
    if (change.session !== undefined && change.session !== null) scopes.push(`session:${change.keyId}:${change.session}`);
    return scopes;
  }

  private readSpent(scope: BudgetScope, period: BudgetPeriod, since: string, until: string): number {
    // Replicas: every node's spend from PostgreSQL's rollups (src/storage/postgres/spend-source.ts); until it answers, this node's own.
    // A key's or tenant's scope is passed on as just its level and id (the source may hold it while it refreshes).
    const asked = isAttributed(scope) ? scope : { level: scope.level, id: scope.id };
    return this.source?.read(asked, period, { since, until }) ?? this.local.read(scope, period, { since, until });
  }

  /** Drops one read (it is read again from the database when next asked for). */
  private forget(read: string): void {
    this.cache.delete(read);
    this.committedSinceRead.delete(read);
    const scope = read.slice(0, read.indexOf('|'));
    const reads = this.readsByScope.get(scope);
    reads?.delete(read);
    if (reads?.size === 0) this.readsByScope.delete(scope);
  }
}

function sumDays(days: DayAmounts | undefined, since: string, until: string): number {
  if (days === undefined) return 0;
  let total = 0;
  for (const [day, amount] of days) if (day >= since && day <= until) total += amount;
  return total;
}
