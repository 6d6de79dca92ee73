/**
 * OpenTelemetry traces of the request path (docs/tracing.md): a tracer provider of its own (never
 * registered as the process's global one), spans batched and exported over OTLP/HTTP (JSON)
 * off the request path, flushed when Tollgate closes. This module and what it imports (the
 * SDK, request-spans.ts) are loaded only when the config names an endpoint (index.ts's
 * loadTracing); otherwise no process reads them. Each process of `serve --workers N` builds
 * its own and exports its own spans.
 */
import type { Attributes } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TracerProvider,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TracingSettings } from '../config/index.js';
import type { Logger } from '../logger.js';
import type { RequestEvents } from '../pipeline/finished.js';
import { redactUrlsIn } from '../redact-url.js';
import { RequestTracer } from './request-spans.js';

export interface Tracing {
  /** The request path's hooks and the finished-event listener. */
  readonly tracer: RequestTracer;
  /** Ends the spans still open and exports what is queued (waits at most the export timeout). */
  shutdown(): Promise<void>;
}

/** How long one export may take before it is given up (the SDK's default is 10 s; a shutdown waits for it). */
const EXPORT_TIMEOUT_MS = 5_000;

/** The tracer provider for `settings`, exporting to their endpoint; it listens to `events` for the requests' ends. */
export function startTracing(settings: TracingSettings, logger: Logger, events: RequestEvents): Tracing {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, 'process.pid': process.pid } satisfies Attributes),
    sampler: samplerOf(settings),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: reportingFailures(new OTLPTraceExporter({ url: settings.url, headers: { ...settings.headers }, timeoutMillis: EXPORT_TIMEOUT_MS }), logger),
        exportTimeoutMillis: EXPORT_TIMEOUT_MS,
      }),
    ],
  });
  const tracer = new RequestTracer(provider.getTracer('tollgate'));
  events.subscribe(tracer.finished);
  logger.info(
    { endpoint: redactUrlsIn(settings.url), sampler: settings.sampler, serviceName: settings.serviceName },
    'tracing: exporting spans over OTLP/HTTP',
  );
  return {
    tracer,
    async shutdown() {
      tracer.endAll();
      await provider.shutdown().catch((error: unknown) => logger.warn({ err: error }, 'tracing: the last spans could not be exported'));
    },
  };
}

/** OTEL_TRACES_SAMPLER as the specification defines its values. */
function samplerOf(settings: TracingSettings): Sampler {
  const root = (name: string): Sampler =>
    name.endsWith('always_on') ? new AlwaysOnSampler() : name.endsWith('always_off') ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(settings.ratio);
  return settings.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root: root(settings.sampler) }) : root(settings.sampler);
}

/** Failed exports logged as a warning, at most one a minute (a receiver that is down must not flood the log). */
function reportingFailures(exporter: SpanExporter, logger: Logger): SpanExporter {
  let lastWarnedAt = 0;
  return {
    export(spans: ReadableSpan[], done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && Date.now() - lastWarnedAt >= 60_000) {
          lastWarnedAt = Date.now();
          // The message may quote the URL; the headers (a vendor's key) are never in it.
          logger.warn({ spans: spans.length, reason: redactUrlsIn(result.error?.message ?? 'unknown') }, 'tracing: spans could not be exported');
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
