/**
 * Deciding which alerts to send. The request path only notes who spent
 * (a map entry per key, from the "request finished" event); a timer then,
 * off the request path, looks at each noted owner's budgets and last hours:
 *
 * - a budget whose period's spend reached a threshold → `budget.threshold`,
 *   once per owner, budget, period and threshold;
 * - an hour whose spend ran over k × the trailing hourly average →
 *   `spend.velocity`, once per owner and UTC hour.
 *
 * "Once" is a claim (claims.ts) on an id naming all of that, shared by every
 * process; the process that wins writes one outbox row per webhook.
 */
import { budgetChecksFor } from '../budgets/check.js';
import { isAttributed, type SpendTracker } from '../budgets/spend-tracker.js';
import { dayStartMs, HOUR_MS, periodEnd, periodId, periodStart, utcHour, type BudgetPeriod } from '../domain/calendar.js';
import type { Caller } from '../domain/caller.js';
import type { Logger } from '../logger.js';
import type { FinishedListener } from '../pipeline/finished.js';
import type { AlertClaims } from './claims.js';
import { thresholdEvent, velocityEvent, type AlertEvent, type AlertOwner } from './events.js';
import { forecastBudget } from './budget-forecast.js';
import type { AlertOutbox } from './outbox.js';
import type { AlertSettings } from './settings.js';
import type { AlertSpendReads } from './spend-reads.js';
import { percentOf, reachedThresholds } from './thresholds.js';
import { trailingAverage, velocityExceeded } from './velocity.js';
import { checkRunaway, type RunawayDeps } from './runaway-stop.js';

/** Owners evaluated per tick at most; the rest wait for the next one. */
const OWNERS_PER_TICK = 500;
/** Claim ids remembered as decided, at most (cleared when full: a repeat claim only asks the store again). */
const DECIDED_MAX = 50_000;
/** A lifetime budget's claims never lapse. */
const FOREVER_MS = 100 * 365 * 86_400_000;
const DAY_MS = 86_400_000;
/**
 * An owner is looked at again on every tick for this long (wall clock) after its last request:
 * spend this process learns later — other replicas' shipped rows, other processes' commits —
 * can cross a threshold without another request here.
 */
const LINGER_MS = 15_000;
/** Alerts claimed but not yet written to the outbox (the file was busy), kept for the next ticks at most. */
const UNQUEUED_MAX = 1000;

export interface MonitorDeps {
  readonly settings: AlertSettings;
  readonly spend: SpendTracker;
  readonly reads: AlertSpendReads;
  readonly claims: AlertClaims;
  readonly outbox: AlertOutbox;
  readonly now: () => number;
  readonly logger: Logger;
  /** Real time, for when deliveries are due (`now` may be a test's hand-moved clock). */
  readonly wallClock?: () => number;
  /** Called after deliveries were added to the outbox. */
  readonly onEnqueued: () => void;
  /** The runaway stop's key store and lookups (with `settings.runaway`). */
  readonly runaway?: Omit<RunawayDeps, 'settings' | 'reads'> | undefined;
}

interface Noted {
  readonly caller: Caller;
  /** A request of this caller was refused by a budget. */
  readonly refusedByBudget: boolean;
  /** When its last request finished (wall clock). */
  readonly lastAt: number;
}

interface OwnerBudget {
  readonly microUsd: number;
  readonly period: BudgetPeriod;
  readonly spent: (now: number) => number;
}

export class AlertMonitor {
  /** Callers that spent (or were refused by a budget) since the last tick, by key id; the newest caller, as its policy may have changed. */
  private readonly noted = new Map<string, Noted>();
  private globalNoted = false;
  private readonly decided = new Set<string>();
  /** Keys on which the runaway stop paused something (the key, `session:…`, `end_user:…`), looked at on every tick until released. */
  private readonly paused = new Map<string, ReadonlySet<string>>();
  /** Claimed alerts whose outbox write failed (the file busy): written on a later tick. */
  private readonly unqueued: Array<{ readonly event: AlertEvent; readonly now: number }> = [];
  /** Ticks run one after the other. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly deps: MonitorDeps) {}

  /** Spend that is no request's settlement (a batch settled from its results): the key is judged at the next tick. */
  noteSpend(caller: Caller): void {
    const before = this.noted.get(caller.key.id);
    this.noted.set(caller.key.id, { caller, refusedByBudget: before?.refusedByBudget ?? false, lastAt: (this.deps.wallClock ?? Date.now)() });
    this.globalNoted = true;
  }

  /** The request path's only part: remember who spent. */
  readonly listener: FinishedListener = (event) => {
    const refusedByBudget = event.kind === 'refused' && event.reason === 'budget';
    // A paused key's refusals (or a paused session's) bring it back to be judged (after a restart, say).
    const paused = event.caller.key.throttle !== undefined || (event.caller.key.pauses?.some((pause) => pause.reason !== undefined) ?? false);
    if (event.kind !== 'settled' && !refusedByBudget && !paused) return;
    // Bounded by the number of keys: one entry per key, replaced.
    const before = this.noted.get(event.caller.key.id);
    this.noted.set(event.caller.key.id, {
      caller: event.caller,
      refusedByBudget: refusedByBudget || (before?.refusedByBudget ?? false),
      lastAt: (this.deps.wallClock ?? Date.now)(),
    });
    if (event.kind === 'settled') this.globalNoted = true;
  };

  /** True when owners are waiting to be looked at. */
  get hasNoted(): boolean {
    return this.noted.size > 0 || this.globalNoted;
  }

  /** Looks at every owner noted since the last tick; sends what is due. Ticks run one after another. */
  tick(): Promise<void> {
    const next = this.queue.then(() => this.run());
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async run(): Promise<void> {
    const now = this.deps.now();
    for (const { event, now: at } of this.unqueued.splice(0)) this.enqueue(event, at);
    const batch: Noted[] = [];
    for (const [id, noted] of this.noted) {
      if (batch.length >= OWNERS_PER_TICK) break;
      this.noted.delete(id);
      batch.push(noted);
    }
    const seenTenants = new Set<string>();
    const wallNow = (this.deps.wallClock ?? Date.now)();
    for (const noted of batch) {
      const failed = await this.evaluateCaller(noted, now, seenTenants);
      // A claim store that could not be asked (Redis down), or spend still arriving: look again next tick.
      const again = failed || wallNow - noted.lastAt < LINGER_MS || this.paused.has(noted.caller.key.id);
      if (again && !this.noted.has(noted.caller.key.id)) this.noted.set(noted.caller.key.id, { ...noted, refusedByBudget: false });
    }
    if (this.globalNoted) {
      this.globalNoted = false;
      if (await this.evaluateGlobal(now)) this.globalNoted = true;
    }
  }

  /** Returns true when something could not be decided (to retry). */
  private async evaluateCaller({ caller, refusedByBudget }: Noted, now: number, seenTenants: Set<string>): Promise<boolean> {
    let failed = false;
    const byOwner = new Map<string, { owner: AlertOwner; budgets: OwnerBudget[] }>();
    for (const check of budgetChecksFor(caller)) {
      const { scope } = check;
      // Alerts stay per key, tenant and global (README "Alerts"); end users' and tags' budgets are not among budgetChecksFor's.
      if (isAttributed(scope)) continue;
      const name = scope.level === 'key' ? caller.key.name : (caller.tenant?.name ?? scope.id);
      const ownerKey = `${scope.level}:${scope.id}`;
      let entry = byOwner.get(ownerKey);
      if (entry === undefined) {
        entry = { owner: { level: scope.level, id: scope.id, name }, budgets: [] };
        byOwner.set(ownerKey, entry);
      }
      entry.budgets.push({ ...check.budget, spent: (at) => this.deps.spend.spent(scope, check.budget.period, at) });
    }
    const keyOwner: AlertOwner = { level: 'key', id: caller.key.id, name: caller.key.name };
    if (!byOwner.has(`key:${caller.key.id}`)) byOwner.set(`key:${caller.key.id}`, { owner: keyOwner, budgets: [] });
    failed = !(await this.runawayStop(caller, now)) || failed;
    if (caller.tenant !== undefined && !byOwner.has(`tenant:${caller.tenant.id}`)) {
      byOwner.set(`tenant:${caller.tenant.id}`, { owner: { level: 'tenant', id: caller.tenant.id, name: caller.tenant.name }, budgets: [] });
    }
    // A budget refusal means the budget that refused is used up, even when its spend stays under
    // 100% (a hard cap stops short: what is left cannot pay one request). The refusal does not say
    // which budget refused; it is the one with the least left.
    let exhausted: OwnerBudget | undefined;
    if (refusedByBudget) {
      let least = Number.POSITIVE_INFINITY;
      for (const { budgets } of byOwner.values()) {
        for (const budget of budgets) {
          const left = budget.microUsd - budget.spent(now);
          if (left < least) [least, exhausted] = [left, budget];
        }
      }
    }
    for (const { owner, budgets } of byOwner.values()) {
      if (owner.level === 'tenant') {
        if (seenTenants.has(owner.id ?? '')) continue;
        seenTenants.add(owner.id ?? '');
      }
      failed = (await this.evaluateOwner(owner, budgets, now, exhausted)) || failed;
    }
    return failed;
  }

  private async evaluateGlobal(now: number): Promise<boolean> {
    const owner: AlertOwner = { level: 'global', id: null, name: 'global' };
    const budgets = this.deps.settings.globalBudgets.map((b) => ({ ...b, spent: (at: number) => this.deps.reads.globalSpent(b.period, at) }));
    return this.evaluateOwner(owner, budgets, now);
  }

  private async evaluateOwner(owner: AlertOwner, budgets: readonly OwnerBudget[], now: number, exhausted?: OwnerBudget): Promise<boolean> {
    let failed = false;
    const ownerId = `${owner.level}:${owner.id ?? '*'}`;
    for (const budget of budgets) {
      const spent = budget.spent(now);
      const reached = reachedThresholds(this.deps.settings.thresholds, budget === exhausted ? Math.max(spent, budget.microUsd) : spent, budget.microUsd);
      for (const threshold of reached) {
        const claimId = `threshold:${ownerId}:${budget.period}:${periodId(budget.period, now)}:${budget.microUsd}:${threshold}`;
        if (this.decided.has(claimId)) continue;
        const ends = periodEnd(budget.period, now);
        const forecast = forecastBudget(this.deps.reads, owner, budget, spent, now);
        const event = thresholdEvent({
          claimId,
          now,
          owner,
          threshold,
          forecast,
          budget: {
            period: budget.period,
            periodStart: budget.period === 'total' ? null : dayStartMs(periodStart(budget.period, now)),
            periodEnd: ends ?? null,
            limitMicros: budget.microUsd,
            spentMicros: spent,
            percent: percentOf(spent, budget.microUsd),
          },
        });
        failed = !(await this.fire(claimId, event, now, (ends ?? now + FOREVER_MS) + DAY_MS)) || failed;
      }
    }
    if (this.deps.settings.velocity.enabled) failed = !(await this.checkVelocity(owner, ownerId, now)) || failed;
    return failed;
  }

  private async checkVelocity(owner: AlertOwner, ownerId: string, now: number): Promise<boolean> {
    const { velocity } = this.deps.settings;
    const hour = utcHour(now);
    const claimId = `velocity:${ownerId}:${hour}`;
    if (this.decided.has(claimId)) return true;
    const lastHourMicros = this.deps.reads.hourSpend(owner, hour, hour + HOUR_MS);
    if (lastHourMicros < velocity.minimumMicros) return true;
    const trailingMicros = this.deps.reads.hourSpend(owner, hour - velocity.trailingHours * HOUR_MS, hour);
    const input = { lastHourMicros, trailingMicros, trailingHours: velocity.trailingHours, factor: velocity.factor, minimumMicros: velocity.minimumMicros };
    if (!velocityExceeded(input)) return true;
    const event = velocityEvent({
      claimId,
      now,
      owner,
      hourStart: hour,
      lastHourMicros,
      averageMicros: trailingAverage(input),
      trailingHours: velocity.trailingHours,
      factor: velocity.factor,
    });
    return this.fire(claimId, event, now, hour + 2 * HOUR_MS);
  }

  /** Pauses or releases a runaway key, session or end user; false when something could not be done (to look again). */
  private async runawayStop(caller: Caller, now: number): Promise<boolean> {
    const settings = this.deps.settings.runaway;
    if (settings === undefined || this.deps.runaway === undefined) return true;
    let outcome;
    try {
      const wasPaused = this.paused.get(caller.key.id) ?? new Set<string>();
      outcome = await checkRunaway({ ...this.deps.runaway, settings, reads: this.deps.reads }, caller.key, now, wasPaused);
    } catch (error) {
      this.deps.logger.warn({ message: (error as Error).message, key: caller.key.name }, 'runaway check failed; will look again');
      return false;
    }
    if (outcome.paused.size > 0) this.paused.set(caller.key.id, outcome.paused);
    else this.paused.delete(caller.key.id);
    let fired = true;
    for (const { claimId, event } of outcome.alerts) fired = (await this.fire(claimId, event, now, now + 2 * DAY_MS)) && fired;
    return fired;
  }

  /**
   * An alert decided elsewhere (a scheduled reconciliation's drift), sent once per `claimId` as
   * the monitor's own are. False when the claim store could not be asked.
   */
  raise(claimId: string, event: AlertEvent, expiresAt: number): Promise<boolean> {
    return this.fire(claimId, event, this.deps.now(), expiresAt);
  }

  /** Claims the alert; the winner adds it to the outbox. False when the claim store could not be asked. */
  private async fire(claimId: string, event: AlertEvent, now: number, expiresAt: number): Promise<boolean> {
    let won: boolean;
    try {
      won = await this.deps.claims.claim(claimId, now, expiresAt);
    } catch (error) {
      this.deps.logger.warn({ message: (error as Error).message, store: this.deps.claims.kind }, 'alert claim failed; will look again');
      return false;
    }
    if (this.decided.size >= DECIDED_MAX) this.decided.clear();
    this.decided.add(claimId);
    if (won) this.enqueue(event, now);
    return true;
  }

  /** One outbox row per webhook that takes the event's type; kept for a later tick when the file is busy. */
  private enqueue(event: AlertEvent, now: number): void {
    const type = event.type;
    const webhooks = this.deps.settings.webhooks.filter((hook) => type !== 'test' && hook.events.includes(type));
    if (webhooks.length === 0) return;
    const body = JSON.stringify(event);
    let added: number;
    try {
      added = this.deps.outbox.enqueue(
        webhooks.map((hook) => ({ eventId: event.id, eventType: type, webhook: hook.name, body, createdAt: now })),
        (this.deps.wallClock ?? Date.now)(),
      );
    } catch (error) {
      if (this.unqueued.length < UNQUEUED_MAX) {
        this.unqueued.push({ event, now });
        this.deps.logger.warn({ eventId: event.id, message: (error as Error).message }, 'alert could not be queued yet; will retry');
      } else {
        this.deps.logger.error(
          { eventId: event.id, event: type, owner: event.owner, message: (error as Error).message },
          'alert could not be queued: alert dropped',
        );
      }
      return;
    }
    if (added < webhooks.length) {
      this.deps.logger.error({ eventId: event.id, event: type, owner: event.owner }, 'alert outbox is full: alert dropped');
    } else {
      this.deps.logger.info({ eventId: event.id, event: type, owner: event.owner, summary: event.summary }, 'alert');
      this.deps.onEnqueued();
    }
  }
}
