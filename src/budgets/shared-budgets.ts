/**
 * Budgets shared by proxy nodes that do not share a database file: with
 * Redis configured, each key's and tenant's budget for a period is a counter
 * in Redis (`lua/budget.lua`, run by coordination/budget-counters.ts; the
 * primary of `serve --workers N` keeps the same counters for its workers),
 * reserved atomically before a request goes upstream and moved to the actual
 * cost afterwards. A counter Redis does not have yet is seeded from the
 * calling node's own ledger.
 *
 * Levels (key, tenant) live in different Cluster slots, so they are reserved
 * one after the other; a refusal at the second gives the first back. That
 * can only refuse a request another would have let through, never overspend.
 *
 * Errors (Redis down, a timeout) are thrown as {@link BudgetStoreUnavailable}
 * for the caller's fail mode; after one, Redis is skipped for `cooldownMs`.
 */
import type { Cluster, Redis } from 'ioredis';
import { redisBudgetCounters, type BudgetCounters } from '../coordination/budget-counters.js';
import type { FailMode } from '../coordination/fail-mode.js';
import type { BudgetCheck, BudgetDecision, BudgetStanding } from './check.js';
import { periodEnd, periodId } from '../domain/calendar.js';

/** Counters outlive their period by a week, for late settlements and inspection. */
const AFTER_PERIOD_MS = 7 * 86_400_000;

/** Redis could not be asked; the fail mode decides. */
class BudgetStoreUnavailable extends Error {
  override readonly name = 'BudgetStoreUnavailable';
}

/** A reservation made in Redis: settle it once with the actual cost, or release it. */
export interface BudgetReservation {
  /** What was reserved in every budget (may be less than asked, never less than `least`). */
  readonly amount: number;
  /** Gives back what is above `to`, before the request is sent. */
  shrink(to: number): void;
  settle(actualMicroUsd: number): void;
  release(): void;
}

export interface SharedBudgetOptions {
  readonly keyPrefix?: string;
  /** Longest wait for one reservation, ms. */
  readonly timeoutMs?: number;
  /** After a failure, skip Redis this long (fail mode instead), ms. */
  readonly cooldownMs?: number;
  readonly onError?: (error: unknown) => void;
  /** Called after each reservation attempt (metrics): false when Redis could not be asked. */
  readonly onCall?: (ok: boolean) => void;
}

export class SharedBudgetStore {
  private readonly counters: BudgetCounters;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly cooldownMs: number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly onCall: ((ok: boolean) => void) | undefined;
  private skipUntil = 0;

  constructor(redis: Redis | Cluster | BudgetCounters, options: SharedBudgetOptions = {}) {
    this.counters = 'defineCommand' in redis ? redisBudgetCounters(redis) : redis;
    this.prefix = options.keyPrefix ?? 'tg';
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.cooldownMs = options.cooldownMs ?? 1000;
    this.onError = options.onError;
    this.onCall = options.onCall;
  }

  /** The counter of one budget in one period. */
  counterKey(check: BudgetCheck, now: number): string {
    return `${this.prefix}:{${check.scope.level}:${check.scope.id}}:budget:${periodId(check.budget.period, now)}`;
  }

  /**
   * Reserves `amount` in every budget, or in none. When the whole amount does
   * not fit but `least` does, reserves the most every budget can hold (see
   * lua/budget.lua); the reservation says how much. `seed` says what this
   * node's ledger knows was spent, for counters Redis does not have yet.
   */
  async reserve(
    checks: readonly BudgetCheck[],
    amount: number,
    now: number,
    seed: (check: BudgetCheck) => number,
    least: number = amount,
    exactSeed?: (check: BudgetCheck) => Promise<number>,
  ): Promise<{ decision: BudgetDecision; reservation: BudgetReservation | undefined }> {
    if (performance.now() < this.skipUntil) {
      this.onCall?.(false);
      throw new BudgetStoreUnavailable('Redis is cooling down after a failure');
    }
    // Each level may grant less than the one before; all end at the smallest grant.
    const taken: Array<{ key: string; amount: number; standing: BudgetStanding }> = [];
    const giveBack = (): void => {
      for (const level of taken) this.adjust([level.key], -level.amount);
    };
    let ask = amount;
    try {
      for (const check of checks) {
        const key = this.counterKey(check, now);
        const end = periodEnd(check.budget.period, now);
        const ttl = end === undefined ? 0 : end - now + AFTER_PERIOD_MS;
        const call = (seeded: number) => this.withTimeout(this.counters.reserve(key, check.budget.microUsd, ask, seeded, ttl, Math.min(least, ask)));
        let [admitted, spentBefore, granted] = await call(exactSeed === undefined ? seed(check) : -1);
        if (Number(admitted) === 2) {
          // A new counter, and this node can read the exact spend (once per period and owner).
          const exact = await this.withTimeout(exactSeed!(check)).catch(() => seed(check));
          [admitted, spentBefore, granted] = await call(Math.max(0, exact));
        }
        const spent = Number(spentBefore);
        if (Number(admitted) !== 1) {
          giveBack();
          this.onCall?.(true);
          const refusedBy: BudgetStanding = { check, spentMicroUsd: spent, remainingMicroUsd: check.budget.microUsd - spent - least, resetsAt: end };
          return { decision: { ok: false, refusedBy, reservationMicroUsd: least }, reservation: undefined };
        }
        ask = Number(granted);
        taken.push({ key, amount: ask, standing: { check, spentMicroUsd: spent, remainingMicroUsd: 0, resetsAt: end } });
      }
    } catch (error) {
      giveBack();
      this.skipUntil = performance.now() + this.cooldownMs;
      this.onError?.(error);
      this.onCall?.(false);
      throw error instanceof BudgetStoreUnavailable ? error : new BudgetStoreUnavailable(String((error as Error).message ?? error));
    }
    this.onCall?.(true);
    let tightest: BudgetStanding | undefined;
    for (const level of taken) {
      // Earlier levels granted more than the last one: keep only the final amount.
      this.adjust([level.key], ask - level.amount);
      const remainingMicroUsd = level.standing.check.budget.microUsd - level.standing.spentMicroUsd - ask;
      if (tightest === undefined || remainingMicroUsd < tightest.remainingMicroUsd) tightest = { ...level.standing, remainingMicroUsd };
    }
    const keys = taken.map((level) => level.key);
    let reserved = ask;
    let done = false;
    return {
      decision: { ok: true, tightest },
      reservation: {
        amount: reserved,
        shrink: (to) => {
          if (done || to >= reserved) return;
          this.adjust(keys, to - reserved);
          reserved = to;
        },
        settle: (actual) => {
          if (done) return;
          done = true;
          this.adjust(keys, actual - reserved);
        },
        release: () => {
          if (done) return;
          done = true;
          this.adjust(keys, -reserved);
        },
      },
    };
  }

  /** Moves counters by `delta`, without waiting (a lost adjustment errs on the strict side only if positive). */
  private adjust(keys: readonly string[], delta: number): void {
    if (delta === 0) return;
    for (const key of keys) {
      this.counters.adjust(key, delta).catch((error: unknown) => this.onError?.(error));
    }
  }

  private withTimeout<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BudgetStoreUnavailable(`no answer from Redis within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }
}

/** Budgets shared through Redis, and what to do when Redis cannot be asked. */
export interface SharedBudgets {
  readonly store: SharedBudgetStore;
  readonly failMode: FailMode;
  /** Replicas: the spend every node shipped, read when Redis has no counter yet (else the node's own). */
  readonly exactSeed?: (check: BudgetCheck) => Promise<number>;
}

/** What the shared budgets said about one request. */
export type SharedOutcome =
  | { readonly kind: 'reserved'; readonly decision: Extract<BudgetDecision, { ok: true }>; readonly reservation: BudgetReservation }
  | { readonly kind: 'refused'; readonly decision: Extract<BudgetDecision, { ok: false }> }
  /** Redis cannot be asked and the fail mode is `closed`. */
  | { readonly kind: 'unavailable' }
  /** Redis cannot be asked and the fail mode is `open`: no budget applies. */
  | { readonly kind: 'unchecked' }
  /** Redis cannot be asked and the fail mode is `local`: this node's ledger decides. */
  | { readonly kind: 'local' };

/**
 * Reserves `amount` (or, when that does not fit, as much as every budget holds
 * but at least `least`) in every shared budget or in none, applying the fail
 * mode when Redis cannot be asked.
 */
export async function reserveSharedBudgets(
  shared: SharedBudgets,
  checks: readonly BudgetCheck[],
  amount: number,
  least: number,
  now: number,
  seed: (check: BudgetCheck) => number,
): Promise<SharedOutcome> {
  try {
    const { decision, reservation } = await shared.store.reserve(checks, amount, now, seed, least, shared.exactSeed);
    if (!decision.ok) return { kind: 'refused', decision };
    return { kind: 'reserved', decision, reservation: reservation! };
  } catch (error) {
    if (!(error instanceof BudgetStoreUnavailable)) throw error;
    return shared.failMode === 'closed' ? { kind: 'unavailable' } : shared.failMode === 'open' ? { kind: 'unchecked' } : { kind: 'local' };
  }
}
