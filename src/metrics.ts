/**
 * Prometheus metrics (prom-client, own registry, default process metrics).
 * Names follow Prometheus conventions: `tollgate_` prefix, base units
 * (seconds, USD), `_total` on counters. Per-key labels carry the key's name
 * or id — never the key — and can be switched off for very many keys.
 *
 * Every label value is bounded: a model is labelled by its price-table name
 * when the table knows it and `other` otherwise (clients choose model names,
 * and a hostile tenant once grew /metrics to 80 MB with 200 of them), and each label keeps
 * at most a fixed number of distinct values, the rest reading `other`.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { builtinPriceTable, resolvePrice, type PriceTable } from './estimate/prices.js';
import { rememberByName } from './estimate/models.js';
import { SummedCounter } from './summed-counter.js';
import { SummedHistogram } from './summed-histogram.js';

/** How requests are labelled per key: by name, by id, or not at all (one series for all keys). */
export const KEY_LABEL_MODES = ['name', 'id', 'none'] as const;
export type KeyLabelMode = (typeof KEY_LABEL_MODES)[number];

/** The label value of whatever is unknown or past a label's cap. */
const OTHER_LABEL = 'other';
/** Distinct key labels kept before new keys read `other` (TOLLGATE_METRICS_KEY_LABEL=none for one series). */
const MAX_KEY_LABELS = 1000;
/** Distinct model labels kept (the price table bounds them already; a huge custom table too). */
const MAX_MODEL_LABELS = 500;

/** A label's values: the first `cap` distinct ones, then `other`. */
class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly cap: number) {}

  value(text: string): string {
    if (this.seen.has(text)) return text;
    if (this.seen.size >= this.cap) return OTHER_LABEL;
    this.seen.add(text);
    return text;
  }
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const DECISION_BUCKETS = [0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];

export class Metrics {
  readonly registry = new Registry();
  private readonly keyLabelMode: KeyLabelMode;

  readonly requests: Counter<'key' | 'model' | 'endpoint' | 'outcome'>;
  readonly promptTokens: Counter<'key' | 'model'>;
  readonly completionTokens: Counter<'key' | 'model'>;
  readonly spend: Counter<'key' | 'model'>;
  readonly upstreamDuration: SummedHistogram<'endpoint' | 'stream'>;
  readonly timeToFirstToken: SummedHistogram<'endpoint'>;
  readonly estimateRatio: SummedHistogram<'endpoint' | 'upstream'>;
  /** Tries of each upstream by how they ended (labels: the config's upstream names, a fixed set of outcomes). */
  readonly upstreamAttempts: Counter<'upstream' | 'outcome'>;
  /** Requests whose client left before the answer ended, by how they were settled (a fixed set: bounded). */
  readonly clientAborts: Counter<'usage_source'>;
  readonly rejections: Counter<'key' | 'reason'>;
  readonly decisions: Counter<'limit' | 'result'>;
  readonly decisionDuration: SummedHistogram<'store'>;
  readonly bucketLevel: Gauge<'key' | 'limit'>;
  readonly redisCalls: Counter<'op'>;
  readonly redisFailures: Counter<'op'>;
  readonly leaseTopUps: Counter<'result'>;
  readonly failMode: Gauge<'reason'>;
  readonly ledgerQueueDepth: Gauge;
  readonly ledgerWriteDuration: SummedHistogram<never>;
  readonly ledgerRows: Counter;
  readonly ledgerFailures: Counter;
  readonly ledgerLockWaits: Counter;
  readonly rollupFolded: Counter<'kind'>;

  private readonly requestSums = new SummedCounter(['key', 'model', 'endpoint', 'outcome'] as const);
  private readonly promptSums = new SummedCounter(['key', 'model'] as const);
  private readonly completionSums = new SummedCounter(['key', 'model'] as const);
  private readonly spendSums = new SummedCounter(['key', 'model'] as const);
  private readonly attemptSums = new SummedCounter(['upstream', 'outcome'] as const);
  private readonly abortSums = new SummedCounter(['usage_source'] as const);
  private readonly decisionSums = new SummedCounter(['limit', 'result'] as const);
  private readonly rejectionSums = new SummedCounter(['key', 'reason'] as const);
  private readonly prices: PriceTable;
  private readonly keyLabels = new BoundedLabel(MAX_KEY_LABELS);
  private readonly modelLabels = new BoundedLabel(MAX_MODEL_LABELS);

  constructor(options: { keyLabel?: KeyLabelMode; defaultMetrics?: boolean; prices?: PriceTable } = {}) {
    this.keyLabelMode = options.keyLabel ?? 'name';
    this.prices = options.prices ?? builtinPriceTable;
    const registers = [this.registry];
    if (options.defaultMetrics !== false) {
      collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_' });
      // prom-client names three gauges `…_total`, which Prometheus reserves for
      // counters (promtool rejects them); the event-loop, heap, GC and CPU
      // metrics stay.
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
        this.registry.removeSingleMetric(`tollgate_${name}`);
      }
    }

    this.requests = new Counter({
      name: 'tollgate_requests_total',
      help: 'Proxied requests by key, model, endpoint and how they ended.',
      labelNames: ['key', 'model', 'endpoint', 'outcome'],
      registers,
      collect: () => this.requestSums.flushInto(this.requests),
    });
    this.promptTokens = new Counter({
      name: 'tollgate_prompt_tokens_total',
      help: 'Prompt tokens billed (reported by the upstream, or counted).',
      labelNames: ['key', 'model'],
      registers,
      collect: () => this.promptSums.flushInto(this.promptTokens),
    });
    this.completionTokens = new Counter({
      name: 'tollgate_completion_tokens_total',
      help: 'Completion tokens billed, reasoning included.',
      labelNames: ['key', 'model'],
      registers,
      collect: () => this.completionSums.flushInto(this.completionTokens),
    });
    this.spend = new Counter({
      name: 'tollgate_spend_usd_total',
      help: 'Money spent, in USD (the ledger keeps exact micro-USD).',
      labelNames: ['key', 'model'],
      registers,
      collect: () => this.spendSums.flushInto(this.spend),
    });
    this.upstreamDuration = new SummedHistogram({
      name: 'tollgate_upstream_duration_seconds',
      help: 'Time from sending a request upstream to the end of its answer.',
      labelNames: ['endpoint', 'stream'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.timeToFirstToken = new SummedHistogram({
      name: 'tollgate_time_to_first_token_seconds',
      help: 'Time from receiving a streamed request to its first generated token.',
      labelNames: ['endpoint'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.estimateRatio = new SummedHistogram({
      name: 'tollgate_prompt_estimate_ratio',
      help: 'Actual prompt tokens divided by the estimate (1 = exact), per upstream that answered.',
      labelNames: ['endpoint', 'upstream'],
      buckets: [0.5, 0.8, 0.9, 0.95, 0.99, 1, 1.01, 1.05, 1.1, 1.25, 1.5, 2],
      registers,
    });
    this.upstreamAttempts = new Counter({
      name: 'tollgate_upstream_attempts_total',
      help: 'Tries of an upstream, by outcome: ok, client_error, rate_limited, server_error, connect_error, timeout, skipped (breaker open or Retry-After), client_aborted.',
      labelNames: ['upstream', 'outcome'],
      registers,
      collect: () => this.attemptSums.flushInto(this.upstreamAttempts),
    });
    this.clientAborts = new Counter({
      name: 'tollgate_client_aborts_total',
      help: 'Forwarded requests whose client left before the answer ended, by how they were settled: reported (read on until the upstream reported its usage), reserved (its usage never came: at the reservation), counted (the text of an answer that ended without usage), none (nothing billed).',
      labelNames: ['usage_source'],
      registers,
      collect: () => this.abortSums.flushInto(this.clientAborts),
    });
    this.rejections = new Counter({
      name: 'tollgate_rejections_total',
      help: 'Requests refused before going upstream, by reason.',
      labelNames: ['key', 'reason'],
      registers,
      collect: () => this.rejectionSums.flushInto(this.rejections),
    });
    this.decisions = new Counter({
      name: 'tollgate_ratelimit_decisions_total',
      help: 'Rate-limit decisions per limit and result.',
      labelNames: ['limit', 'result'],
      registers,
      collect: () => this.decisionSums.flushInto(this.decisions),
    });
    this.decisionDuration = new SummedHistogram({
      name: 'tollgate_ratelimit_decision_duration_seconds',
      help: 'Time to decide one request against all its limits.',
      labelNames: ['store'],
      buckets: DECISION_BUCKETS,
      registers,
    });
    const sample = (): Iterable<{ key: string; limit: string; ratio: number }> => this.bucketSampler?.() ?? [];
    this.bucketLevel = new Gauge({
      name: 'tollgate_ratelimit_bucket_fill_ratio',
      help: 'Sampled fill of the buckets of recently used keys (units left divided by burst), read at scrape time.',
      labelNames: ['key', 'limit'],
      registers,
      collect() {
        this.reset();
        for (const { key, limit, ratio } of sample()) this.set({ key, limit }, ratio);
      },
    });
    this.redisCalls = new Counter({ name: 'tollgate_redis_calls_total', help: 'Calls to Redis by operation.', labelNames: ['op'], registers });
    this.redisFailures = new Counter({ name: 'tollgate_redis_failures_total', help: 'Failed calls to Redis by operation.', labelNames: ['op'], registers });
    this.leaseTopUps = new Counter({
      name: 'tollgate_lease_topups_total',
      help: 'Lease top-ups from Redis, by whether tokens were granted.',
      labelNames: ['result'],
      registers,
    });
    this.failMode = new Gauge({
      name: 'tollgate_ratelimit_degraded',
      help: '1 while limits run in the configured fail mode because Redis is unavailable.',
      labelNames: ['reason'],
      registers,
    });
    this.ledgerQueueDepth = new Gauge({ name: 'tollgate_ledger_queue_depth', help: 'Ledger writes waiting for the next commit.', registers });
    this.ledgerWriteDuration = new SummedHistogram({
      name: 'tollgate_ledger_commit_duration_seconds',
      help: 'Duration of one ledger transaction.',
      labelNames: [],
      buckets: [0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers,
    });
    this.ledgerRows = new Counter({ name: 'tollgate_ledger_rows_total', help: 'Ledger operations committed (inserts, settlements, rejections).', registers });
    this.ledgerFailures = new Counter({
      name: 'tollgate_ledger_commit_failures_total',
      help: 'Ledger transactions that failed and were retried or refused.',
      registers,
    });
    this.ledgerLockWaits = new Counter({
      name: 'tollgate_ledger_lock_waits_total',
      help: 'Ledger commits that found the database busy (another process, a checkpoint) and waited to try again.',
      registers,
    });
    this.rollupFolded = new Counter({
      name: 'tollgate_rollup_names_folded_total',
      help: 'End users (kind=end_user) and tags (kind=tag) counted under "(other)" because their key had TOLLGATE_MAX_END_USERS or TOLLGATE_MAX_TAGS names that day; kind=end_user_refused: requests refused instead (the end user has limits or a budget).',
      labelNames: ['kind'],
      registers,
    });
  }

  /** Counts a finished request's tokens and spend. */
  recordUsage(key: string, requestModel: string, promptTokens: number, completionTokens: number, spendUsd: number): void {
    const labels = [key, this.modelLabel(requestModel)];
    this.promptSums.add(promptTokens, labels);
    this.completionSums.add(completionTokens, labels);
    this.spendSums.add(spendUsd, labels);
  }

  /** One finished request of a key, model, endpoint and outcome. */
  countRequest(key: string, model: string, endpoint: string, outcome: string): void {
    this.requestSums.add(1, [key, this.modelLabel(model), endpoint, outcome]);
  }

  /** One request refused before going upstream (a flood of refusals is counted as cheaply as one). */
  countRejection(key: string, reason: string): void {
    this.rejectionSums.add(1, [key, reason]);
  }

  /** One decision of a limit (the limiter's observer, create-limiter.ts). */
  countDecision(limit: string, allowed: boolean): void {
    this.decisionSums.add(1, [limit, allowed ? 'allowed' : 'limited']);
  }

  /** Seconds from sending upstream to the end of the answer. */
  observeUpstream(endpoint: string, stream: boolean, seconds: number): void {
    this.upstreamDuration.observe(seconds, [endpoint, stream ? 'true' : 'false']);
  }

  observeTimeToFirstToken(endpoint: string, seconds: number): void {
    this.timeToFirstToken.observe(seconds, [endpoint]);
  }

  observeEstimateRatio(endpoint: string, ratio: number, upstream = 'default'): void {
    this.estimateRatio.observe(ratio, [endpoint, upstream]);
  }

  /** One request whose client left before its answer ended, settled from `usageSource`. */
  countClientAbort(usageSource: string): void {
    this.abortSums.add(1, [usageSource]);
  }

  /** One try of an upstream (names come from the config, outcomes from a fixed set: bounded labels). */
  countAttempt(upstream: string, outcome: string): void {
    this.attemptSums.add(1, [upstream, outcome]);
  }

  observeDecision(store: string, seconds: number): void {
    this.decisionDuration.observe(seconds, [store]);
  }

  private bucketSampler: (() => Iterable<{ key: string; limit: string; ratio: number }>) | undefined;

  /** Where the bucket gauge reads its samples at scrape time. */
  sampleBucketsWith(sampler: () => Iterable<{ key: string; limit: string; ratio: number }>): void {
    this.bucketSampler = sampler;
  }

  /** The label for a key: its name or id (never the secret), or "all" when per-key labels are off. */
  keyLabel(key: { id: string; name: string }): string {
    return this.keyLabelMode === 'none' ? 'all' : this.keyLabels.value(this.keyLabelMode === 'id' ? key.id : key.name);
  }

  /** The label for a request's model: the price table's name for it, or `other` for a model the table does not know. */
  modelLabel(model: string): string {
    // Twice a request (its count and its usage); a name's label never changes once given.
    let label = this.modelLabelOf.get(model);
    if (label === undefined) {
      const price = resolvePrice(model, this.prices);
      label = price.known ? this.modelLabels.value(price.model) : OTHER_LABEL;
      rememberByName(this.modelLabelOf, model, label);
    }
    return label;
  }

  private readonly modelLabelOf = new Map<string, string>();

  private exposition: (() => Promise<string>) | undefined;

  /**
   * Serves /metrics from `render` instead of this registry alone: a worker of
   * `serve --workers N` asks its primary, which aggregates every worker's
   * registry (prom-client's AggregatorRegistry; main.ts).
   */
  renderWith(render: () => Promise<string>): void {
    this.exposition = render;
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ body: string; contentType: string }> {
    const body = this.exposition === undefined ? await this.registry.metrics() : await this.exposition();
    return { body, contentType: this.registry.contentType };
  }
}
