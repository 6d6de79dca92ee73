/** Which alert thresholds (percent of a budget) a period's spend has reached. Pure. */

/** The thresholds in `percents` that `spentMicros` of `limitMicros` has reached (spent · 100 ≥ t · limit). */
export function reachedThresholds(percents: readonly number[], spentMicros: number, limitMicros: number): number[] {
  if (limitMicros <= 0) return [];
  return percents.filter((t) => spentMicros * 100 >= t * limitMicros);
}

/** Spend as a percentage of the budget, to two decimals (for the alert's body). */
export function percentOf(spentMicros: number, limitMicros: number): number {
  if (limitMicros <= 0) return 0;
  return Math.floor((spentMicros * 10_000) / limitMicros) / 100;
}
