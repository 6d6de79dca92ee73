/**
 * Counters summed per series before prom-client sees them, and series found by their label values
 * without building a string (src/metrics.ts uses both).
 */
import type { Counter } from 'prom-client';

/**
 * Values found by a list of label values through one Map per label. Each lookup hashes only label
 * strings that exist already (their hash is kept); a joined id would be a new string, hashed anew,
 * on every call. With no labels there is one value, kept apart (`values[-1]` would be a slow
 * property lookup through V8's runtime).
 */
export class ByLabels<T> {
  private readonly root = new Map<string, unknown>();
  private only: T | undefined;

  constructor(private readonly make: (values: readonly string[]) => T) {}

  get(values: readonly string[]): T {
    if (values.length === 0) return (this.only ??= this.make(values));
    let level = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i] as string;
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(value, next);
      }
      level = next;
    }
    const value = values[last] as string;
    let found = level.get(value) as T | undefined;
    if (found === undefined) {
      found = this.make(values);
      level.set(value, found);
    }
    return found;
  }
}

/**
 * A counter's increments summed per series in plain numbers, and handed to prom-client when it
 * collects, which every read of the registry does first (a scrape, a primary aggregating its
 * workers). prom-client joins the label values into a string and looks it up on every `inc`, even
 * through a child from `labels()`: several times a request (docs/performance.md, "Counters summed
 * before prom-client").
 */
export class SummedCounter<L extends string> {
  private readonly series: Array<Series<L>> = [];
  private readonly byLabels: ByLabels<Series<L>>;

  constructor(labelNames: readonly L[]) {
    this.byLabels = new ByLabels((values) => {
      const labels: Partial<Record<L, string>> = {};
      labelNames.forEach((name, i) => (labels[name] = values[i]));
      const series = { labels, sum: 0, shown: false };
      this.series.push(series);
      return series;
    });
  }

  /**
   * Adds `by` to the series of `values` (in the label names' order). Zero makes the series appear,
   * as prom-client's `inc(0)` does; what a counter refuses (negative, not finite) is dropped.
   */
  add(by: number, values: readonly string[]): void {
    if (by >= 0 && Number.isFinite(by)) this.byLabels.get(values).sum += by;
  }

  /** Hands the sums to `counter` and starts them again from zero: the counter's `collect`. */
  flushInto(counter: Counter<L>): void {
    for (const series of this.series) {
      if (series.sum === 0 && series.shown) continue;
      counter.inc(series.labels, series.sum);
      series.sum = 0;
      series.shown = true;
    }
  }
}

interface Series<L extends string> {
  readonly labels: Partial<Record<L, string>>;
  sum: number;
  /** Whether prom-client has the series (an `inc`, of zero even, made it). */
  shown: boolean;
}
