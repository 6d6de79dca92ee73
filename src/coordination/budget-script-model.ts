/**
 * lua/budget.lua, transcribed line for line into TypeScript with the clock as
 * an argument, for the primary of `tollgate serve --workers N`, which keeps
 * its workers' budget counters the way Redis does
 * (ipc-primary.ts). A differential test
 * (test/integration/coordination/budget-script.test.ts) proves it agrees with the
 * script on real Redis. Pure: no I/O.
 */

/** A counter: micro-USD spent or reserved, and when it expires (ms; undefined = never, like a key without TTL). */
interface BudgetCounter {
  spent: number;
  expiresAt: number | undefined;
}

export type BudgetCounterMap = Map<string, BudgetCounter>;

/** Reads a counter as Redis would at `nowMs`: an expired one is gone. */
function liveCounter(counters: BudgetCounterMap, key: string, nowMs: number): BudgetCounter | undefined {
  const counter = counters.get(key);
  if (counter === undefined) return undefined;
  if (counter.expiresAt !== undefined && counter.expiresAt <= nowMs) {
    counters.delete(key);
    return undefined;
  }
  return counter;
}

/** One run of lua/budget.lua on `counters` at `nowMs`; returns {admitted, spent before, granted}. */
export function runBudgetModel(
  counters: BudgetCounterMap,
  key: string,
  cap: number,
  amount: number,
  seed: number,
  ttlMs: number,
  least: number,
  nowMs: number,
): [number, number, number] {
  let counter = liveCounter(counters, key, nowMs);
  let spent: number;
  if (counter !== undefined) {
    spent = counter.spent;
  } else {
    spent = seed;
    if (spent < 0) return [2, 0, 0];
    counter = { spent, expiresAt: ttlMs > 0 ? nowMs + ttlMs : undefined };
    counters.set(key, counter);
  }
  let granted = amount;
  if (spent + amount > cap) granted = cap - spent;
  if (granted < least || granted < 0) return [0, spent, 0];
  if (granted > 0) counter.spent += granted;
  return [1, spent, granted];
}

/** `INCRBY key delta` at `nowMs`: a missing counter starts at 0 with no expiry, as in Redis. */
export function adjustBudgetModel(counters: BudgetCounterMap, key: string, delta: number, nowMs: number): number {
  const counter = liveCounter(counters, key, nowMs);
  if (counter === undefined) {
    counters.set(key, { spent: delta, expiresAt: undefined });
    return delta;
  }
  counter.spent += delta;
  return counter.spent;
}

/** Drops expired counters (Redis expires keys by itself); returns how many. */
export function expireBudgetModel(counters: BudgetCounterMap, nowMs: number): number {
  let dropped = 0;
  for (const [key, counter] of counters) {
    if (counter.expiresAt !== undefined && counter.expiresAt <= nowMs) {
      counters.delete(key);
      dropped++;
    }
  }
  return dropped;
}
