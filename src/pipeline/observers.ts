/**
 * What watches finished requests: Prometheus metrics and the one JSON log
 * line per forwarded request. Both are listeners of the pipeline's finished
 * event (see finished.ts), wired by the composition root.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { microsToUsd } from '../money.js';
import type { FinishedListener } from './finished.js';

/** Counts every finished request in the metrics. */
export function recordMetrics(metrics: Metrics, store: 'local' | 'redis'): FinishedListener {
  return function recordRequestMetrics(event) {
    const key = metrics.keyLabel(event.caller.key);
    if (event.decisionMs !== undefined) metrics.observeDecision(store, event.decisionMs / 1000);
    if (event.kind === 'refused') {
      metrics.rejections.inc({ key, reason: event.code });
      return;
    }
    const { endpoint, model, usage } = event;
    metrics.countRequest(key, model, endpoint, event.outcome);
    metrics.recordUsage(key, model, usage.promptTokens, usage.completionTokens, microsToUsd(event.costMicros));
    metrics.observeUpstream(endpoint, event.stream, (event.completedAt - event.sentAt) / 1000);
    if (event.ttftMs !== null) metrics.observeTimeToFirstToken(endpoint, event.ttftMs / 1000);
    if (event.usageSource === 'reported' && event.estimate.promptTokens > 0) {
      metrics.observeEstimateRatio(endpoint, usage.promptTokens / event.estimate.promptTokens);
    }
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
      },
      'request',
    );
  };
}
