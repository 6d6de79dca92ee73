/**
 * What watches finished requests: Prometheus metrics and the one JSON log
 * line per forwarded request. Both are listeners of the pipeline's finished
 * event (see finished.ts), wired by the composition root.
 */
import { assumedFor, type PriceAssumption } from '../estimate/prices.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { microsToUsd } from '../domain/money.js';
import type { FinishedListener } from './finished.js';

/** Counts every finished request in the metrics. */
export function recordMetrics(metrics: Metrics, store: 'local' | 'redis' | 'ipc'): FinishedListener {
  return function recordRequestMetrics(event) {
    const key = metrics.keyLabel(event.caller.key);
    if (event.decisionMs !== undefined) metrics.observeDecision(store, event.decisionMs / 1000);
    if (event.kind === 'refused') {
      metrics.countRejection(key, event.code);
      return;
    }
    const { endpoint, model, usage } = event;
    metrics.countRequest(key, model, endpoint, event.outcome);
    if (event.outcome === 'client_aborted') metrics.countClientAbort(event.usageSource);
    metrics.recordUsage(key, model, usage.promptTokens, usage.completionTokens, microsToUsd(event.costMicros));
    metrics.observeUpstream(endpoint, event.stream, (event.completedAt - event.sentAt) / 1000);
    if (event.ttftMs !== null) metrics.observeTimeToFirstToken(endpoint, event.ttftMs / 1000);
    // Counting accuracy only: input reserved at a bound (stored history, files …) is not a count.
    if (event.usageSource === 'reported' && event.estimate.promptTokens > 0 && event.estimate.unseen.reservedTokens === 0) {
      metrics.observeEstimateRatio(endpoint, usage.promptTokens / event.estimate.promptTokens, event.upstream);
    }
    for (const attempt of event.attempts ?? []) metrics.countAttempt(attempt.upstream, attempt.outcome);
  };
}

/** One `request` log line per forwarded request (refusals are logged with their error). */
export function logRequests(logger: Logger): FinishedListener {
  return function logRequest(event) {
    if (event.kind === 'refused') return;
    logger.info(
      {
        requestId: event.requestId,
        keyId: event.caller.key.id,
        endpoint: event.endpoint,
        model: event.model,
        stream: event.stream,
        outcome: event.outcome,
        status: event.status,
        promptTokens: event.usage.promptTokens,
        completionTokens: event.usage.completionTokens,
        costMicros: event.costMicros,
        estCostMicros: event.estimate.reservedMicroUsd,
        latencyMs: event.completedAt - event.startedAt,
        ttftMs: event.ttftMs ?? undefined,
        usageSource: event.usageSource,
        upstreamRequestId: event.upstreamRequestId ?? undefined,
        errorCode: event.errorCode ?? undefined,
        upstream: event.upstream,
        attempts: event.attempts !== undefined && event.attempts.length > 1 ? event.attempts : undefined,
      },
      'request',
    );
  };
}

const ASSUMPTION_TEXT: Record<PriceAssumption, string> = {
  'unknown-model': 'the model is not in the price table; priced at the fallback price',
  priority: 'the upstream used the priority tier and the table has no priority price for the model; priced at the standard price × 5/2',
  audio: 'the upstream billed audio tokens and the table has no audio price for the model; priced at the highest audio price of the table',
};

/**
 * One warning per model and missing price, the first time a settled request was priced by a
 * rule instead of a listed price (prices.ts): the operator learns which entries to add to the
 * config's `prices` without a log line per request.
 */
export function warnAssumedPrices(logger: Logger): FinishedListener {
  const warned = new Set<string>();
  return function warnAssumedPrice(event) {
    if (event.kind !== 'settled' || event.usageSource === 'none') return;
    for (const assumption of assumedFor(event.usage, event.estimate.price)) {
      const key = `${assumption}\u0000${event.estimate.price.model}`;
      if (warned.has(key)) continue;
      if (warned.size >= 10_000) warned.clear();
      warned.add(key);
      logger.warn({ model: event.model, priceEntry: event.estimate.price.model, assumption }, `price not in the table: ${ASSUMPTION_TEXT[assumption]}`);
    }
  };
}
