/**
 * A histogram whose observations are counted in plain numbers per series and read out as
 * prom-client's own histogram reads out, for the histograms every request observes. prom-client's
 * `observe`, even through a child from `labels()`, checks the labels, joins them into a string and
 * looks that string up, then finds the bucket under a number turned into a string: about 0.35 µs an
 * observation, three or four a request (docs/performance.md, "Histograms counted in plain
 * numbers"). It registers in the registries it is given as prom-client's metrics do, and what a
 * scrape or a primary aggregating its workers reads from it is what prom-client's `Histogram` would
 * give for the same observations (test/unit/metrics-sums.test.ts holds the two side by side).
 */
import type { Metric, Registry } from 'prom-client';
import { ByLabels } from './summed-counter.js';

/** One line of a histogram as prom-client's registries read it (its `get()`): a bucket, a sum or a count. */
interface HistogramValue {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName: string;
  /** prom-client's buckets carry one (null without exemplars); kept, so the JSON a primary aggregates is the same. */
  readonly exemplar?: null;
}

interface Series<L extends string> {
  readonly labels: Record<L, string>;
  /** Observations per bucket: `counts[i]` at most `bounds[i]` and above the bucket before; the last, above every bound. */
  readonly counts: number[];
  sum: number;
  count: number;
}

export interface SummedHistogramOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Upper bounds, ascending. */
  readonly buckets: readonly number[];
  readonly registers: readonly Registry[];
}

export class SummedHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly labelNames: readonly L[];
  private series: Array<Series<L>> = [];
  private byLabels: ByLabels<Series<L>>;

  constructor(options: SummedHistogramOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.bounds = [...options.buckets];
    this.labelNames = options.labelNames;
    this.byLabels = this.newSeries();
    // Without labels, prom-client reads out the one series at zero from the start (and not after a reset).
    if (this.labelNames.length === 0) this.byLabels.get([]);
    // A registry reads a metric through its name, type, get() and reset(); prom-client types it as one of its own classes.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** One observation of the series of `values` (in the label names' order); a value that is not a finite number is dropped. */
  observe(value: number, values: readonly string[]): void {
    if (!Number.isFinite(value)) return;
    const series = this.byLabels.get(values);
    let bucket = 0;
    while (bucket < this.bounds.length && value > (this.bounds[bucket] as number)) bucket += 1;
    series.counts[bucket] = (series.counts[bucket] as number) + 1;
    series.sum += value;
    series.count += 1;
  }

  /** What a registry reads: cumulative buckets, `+Inf`, sum and count of each series, as prom-client's histogram gives them. */
  get(): Promise<{ name: string; help: string; type: 'histogram'; values: HistogramValue[]; aggregator: 'sum' }> {
    const values: HistogramValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { labels, counts, sum, count } of this.series) {
      let below = 0;
      this.bounds.forEach((bound, i) => {
        below += counts[i] as number;
        values.push({ labels: { le: bound, ...labels }, value: below, metricName: bucketName, exemplar: null });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: bucketName, exemplar: null });
      values.push({ labels: { ...labels }, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...labels }, value: count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** Forgets every series (`registry.resetMetrics()`). */
  reset(): void {
    this.series = [];
    this.byLabels = this.newSeries();
  }

  private newSeries(): ByLabels<Series<L>> {
    return new ByLabels((values) => {
      const labels = {} as Record<L, string>;
      this.labelNames.forEach((name, i) => (labels[name] = values[i] as string));
      const series = { labels, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.series.push(series);
      return series;
    });
  }
}
