/**
 * One server span per proxied request, with its children: admission, each upstream attempt
 * (which passes its `traceparent` upstream), and the relay of the answer. The route handler and
 * forward drive it through the hooks of src/pipeline/trace-hooks.ts; the pipeline's finished
 * event (src/pipeline/finished.ts) brings the outcome, usage and cost. The server span ends
 * when both have happened: the handler has returned or thrown, and the request is finished (a
 * stream is finished long after its handler returned; a refusal is finished before its throw).
 *
 * Every time is taken from one clock (core's hrTime: the time origin plus performance.now()), so
 * a child never seems to outlast its parent by the SDK's sub-millisecond anchoring of each span.
 *
 * Nothing secret is recorded: no header value but `traceparent`/`tracestate`, no body, no error
 * message (only error codes), the key by name and id only.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';
import { hrTime, W3CTraceContextPropagator } from '@opentelemetry/core';
import { ATTR_ERROR_TYPE, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from '@opentelemetry/semantic-conventions';
import type { Endpoint } from '../endpoints.js';
import { microsToUsd } from '../domain/money.js';
import { TollgateError } from '../domain/errors.js';
import type { AdmittedRequest, EstimatedRequest } from '../pipeline/context.js';
import type { FinishedListener, RequestFinished } from '../pipeline/finished.js';
import { AdmissionRefused } from '../pipeline/refusals.js';
import type { AttemptTrace, RequestTrace, RequestTracing, UpstreamAttempt } from '../pipeline/trace-hooks.js';
import { GEN_AI, OPERATION, PROVIDER, TOLLGATE, UPSTREAM_PROVIDER } from './attributes.js';

type HeaderOf = (name: string) => string | undefined;

const propagator = new W3CTraceContextPropagator();
const fromClient: TextMapGetter<HeaderOf> = { get: (header, name) => header(name), keys: () => [] };
const toUpstream: TextMapSetter<Record<string, string>> = {
  set: (headers, name, value) => {
    headers[name] = value;
  },
};

/** The request path's tracer: begins a span per request and ends it when the request is finished. */
export class RequestTracer implements RequestTracing {
  /** Requests begun and not ended yet, by request id. */
  private readonly open = new Map<string, TracedRequest>();

  constructor(private readonly tracer: Tracer) {}

  begin(requestId: string, endpoint: Endpoint, header: HeaderOf): RequestTrace {
    const parent = propagator.extract(ROOT_CONTEXT, header, fromClient);
    const operation = OPERATION[endpoint];
    const span = this.tracer.startSpan(
      operation,
      {
        kind: SpanKind.SERVER,
        startTime: hrTime(),
        attributes: {
          [GEN_AI.operation]: operation,
          [GEN_AI.provider]: PROVIDER[endpoint],
          [GEN_AI.system]: PROVIDER[endpoint],
          [TOLLGATE.requestId]: requestId,
        },
      },
      parent,
    );
    const traced = new TracedRequest(this, this.tracer, requestId, operation, span, trace.setSpan(parent, span));
    this.open.set(requestId, traced);
    return traced;
  }

  attempt(requestId: string, attempt: UpstreamAttempt, headers: Record<string, string>): AttemptTrace | undefined {
    return this.open.get(requestId)?.attempt(attempt, headers);
  }

  /** The listener of the pipeline's finished event (subscribed by the composition root). */
  readonly finished: FinishedListener = (event) => {
    this.open.get(event.requestId)?.finished(event);
  };

  /** Ends the spans of requests still open (a shutdown), so they are exported with the rest. */
  endAll(): void {
    for (const traced of [...this.open.values()]) traced.end();
  }

  /** @internal */
  forget(requestId: string): void {
    this.open.delete(requestId);
  }
}

class TracedRequest implements RequestTrace {
  private handlerDone = false;
  private finishedSeen = false;
  private ended = false;
  private admitStartedAt = 0;
  private estimatedEdits = 0;
  /** When the last attempt's answer arrived (performance.now()), where the relay begins. */
  private answeredAt: number | undefined;
  private attempts = 0;

  constructor(
    private readonly owner: RequestTracer,
    private readonly tracer: Tracer,
    private readonly requestId: string,
    private readonly operation: string,
    private readonly span: Span,
    private readonly context: Context,
  ) {}

  estimated(request: EstimatedRequest): void {
    const { facts, estimate, attribution } = request;
    this.estimatedEdits = request.edits.length;
    this.span.updateName(`${this.operation} ${facts.model}`);
    this.span.setAttributes({
      [GEN_AI.requestModel]: facts.model,
      [GEN_AI.stream]: facts.stream,
      [TOLLGATE.estimatedCost]: microsToUsd(estimate.reservedMicroUsd),
    });
    if (estimate.clientMaxCompletion !== undefined) this.span.setAttribute(GEN_AI.maxTokens, estimate.clientMaxCompletion);
    if (estimate.n > 1) this.span.setAttribute(GEN_AI.choiceCount, estimate.n);
    if (attribution.endUser !== undefined) this.span.setAttribute(TOLLGATE.endUser, attribution.endUser);
    if (attribution.session !== undefined) this.span.setAttribute(TOLLGATE.session, attribution.session);
    if (request.downgradedFrom !== undefined) this.span.setAttribute(TOLLGATE.downgradedFrom, request.downgradedFrom);
  }

  admitting(): void {
    this.admitStartedAt = performance.now();
  }

  admitted(request: AdmittedRequest): void {
    const capped = request.edits.length > this.estimatedEdits;
    this.span.setAttribute(TOLLGATE.capped, capped);
    const admit = this.tracer.startSpan('tollgate.admit', { kind: SpanKind.INTERNAL, startTime: hrTime(this.admitStartedAt) }, this.context);
    if (request.admission.decisionMs !== undefined) admit.setAttribute(TOLLGATE.decisionMs, request.admission.decisionMs);
    admit.setAttribute(TOLLGATE.capped, capped);
    admit.end(hrTime());
  }

  attempt(attempt: UpstreamAttempt, headers: Record<string, string>): AttemptTrace {
    this.attempts = attempt.number;
    const span = this.tracer.startSpan(
      `${this.operation} ${attempt.model}`,
      {
        kind: SpanKind.CLIENT,
        startTime: hrTime(),
        attributes: { [GEN_AI.operation]: this.operation, [GEN_AI.requestModel]: attempt.model, [TOLLGATE.attempt]: attempt.number },
      },
      this.context,
    );
    if (attempt.upstream !== undefined) span.setAttribute(TOLLGATE.upstream, attempt.upstream);
    if (attempt.kind !== undefined) {
      span.setAttribute(TOLLGATE.upstreamKind, attempt.kind);
      const provider = UPSTREAM_PROVIDER[attempt.kind];
      if (provider !== undefined) span.setAttribute(GEN_AI.provider, provider);
    }
    if (attempt.url !== undefined) setServer(span, attempt.url);
    propagator.inject(trace.setSpan(this.context, span), headers, toUpstream);
    return {
      ended: (status, outcome) => {
        span.setAttribute(TOLLGATE.attemptOutcome, outcome);
        if (status !== undefined) {
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
          this.answeredAt = performance.now();
        }
        if (status === undefined || status >= 400) {
          span.setAttribute(ATTR_ERROR_TYPE, status === undefined ? outcome : String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end(hrTime());
      },
    };
  }

  returned(): void {
    this.handlerDone = true;
    if (this.finishedSeen) this.end();
  }

  failed(error: unknown): void {
    this.handlerDone = true;
    if (error instanceof TollgateError) {
      this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, error.status);
      this.span.setAttribute(ATTR_ERROR_TYPE, error.code);
      if (error instanceof AdmissionRefused && error.refusedBy !== undefined) this.span.setAttribute(TOLLGATE.refusedBy, error.refusedBy);
      if (error.status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      this.span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : 'unknown');
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    // A thrown request was finished first, if it ever is (a refusal, an upstream that never answered).
    this.end();
  }

  finished(event: RequestFinished): void {
    this.finishedSeen = true;
    const { caller } = event;
    this.span.setAttributes({ [TOLLGATE.keyName]: caller.key.name, [TOLLGATE.keyId]: caller.key.id });
    if (caller.tenant !== undefined) this.span.setAttribute(TOLLGATE.tenant, caller.tenant.name);
    if (event.kind === 'refused') {
      this.span.setAttributes({
        [TOLLGATE.outcome]: 'refused',
        [TOLLGATE.refusalCode]: event.code,
        [TOLLGATE.refusalReason]: event.reason,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: event.httpStatus,
      });
    } else {
      const { usage } = event;
      this.span.setAttributes({
        [TOLLGATE.outcome]: event.outcome,
        [TOLLGATE.cut]: event.outcome === 'cut_at_cost_cap',
        [TOLLGATE.actualCost]: microsToUsd(event.costMicros),
        [TOLLGATE.usageSource]: event.usageSource,
        [TOLLGATE.attempts]: this.attempts,
        [GEN_AI.inputTokens]: usage.promptTokens,
        [GEN_AI.outputTokens]: usage.completionTokens,
        [TOLLGATE.cachedTokens]: usage.cachedTokens,
      });
      if (event.status !== null) this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, event.status);
      if (event.status !== null && event.status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
      if (event.upstream !== undefined) this.span.setAttribute(TOLLGATE.upstream, event.upstream);
      if (event.upstreamRequestId !== null) this.span.setAttribute(TOLLGATE.upstreamRequestId, event.upstreamRequestId);
      if (event.errorCode !== null) this.span.setAttribute(ATTR_ERROR_TYPE, event.errorCode);
      this.relaySpan(event.ttftMs, event.outcome);
    }
    if (this.handlerDone) this.end();
  }

  /** The relay: from the answer's headers to the request's end. */
  private relaySpan(ttftMs: number | null, outcome: string): void {
    if (this.answeredAt === undefined) return;
    const relay = this.tracer.startSpan('tollgate.relay', { kind: SpanKind.INTERNAL, startTime: hrTime(this.answeredAt) }, this.context);
    relay.setAttribute(TOLLGATE.outcome, outcome);
    if (ttftMs !== null) relay.setAttribute(TOLLGATE.ttftMs, ttftMs);
    relay.end(hrTime());
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.owner.forget(this.requestId);
    this.span.end(hrTime());
  }
}

/** server.address and server.port of an upstream's base URL (never its path, query or credentials). */
function setServer(span: Span, url: string): void {
  try {
    const parsed = new URL(url);
    span.setAttribute(ATTR_SERVER_ADDRESS, parsed.hostname);
    span.setAttribute(ATTR_SERVER_PORT, parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port));
  } catch {
    // A URL the config accepted always parses; nothing to record otherwise.
  }
}
