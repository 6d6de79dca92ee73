/**
 * What the request path tells a tracer (src/tracing implements it). Absent from the deps when
 * tracing is off: each hook site is then one `undefined` check and nothing else, no span, no
 * lookup, no allocation (bench/tracing.ts measures it).
 */
import type { Endpoint } from '../endpoints.js';
import type { AdmittedRequest, EstimatedRequest } from './context.js';

/** One request's server span, as the route handler drives it. */
export interface RequestTrace {
  /** The body was read and the cost estimated: the model and the request's facts are known. */
  estimated(request: EstimatedRequest): void;
  /** Admission begins (limits, budgets, the pending row). */
  admitting(): void;
  /** Admission said yes (and may have capped the request's output). */
  admitted(request: AdmittedRequest): void;
  /** The handler returned its response (a stream still flows: the span ends when it is settled). */
  returned(): void;
  /** The handler threw: a refusal, a bad request, an upstream that never answered. */
  failed(error: unknown): void;
}

/** One try of one upstream. */
export interface AttemptTrace {
  /** The upstream answered with `status`, or failed before answering (`status` undefined). */
  ended(status: number | undefined, outcome: string): void;
}

export interface RequestTracing {
  /** The request's span begins, continuing the client's `traceparent` when it sent one. */
  begin(requestId: string, endpoint: Endpoint, header: (name: string) => string | undefined): RequestTrace;
  /**
   * A try of `upstream` begins: its span is the request's child, and `headers` (the upstream
   * request's) get its `traceparent`. Undefined when the request is not traced (not sampled).
   */
  attempt(requestId: string, attempt: UpstreamAttempt, headers: Record<string, string>): AttemptTrace | undefined;
}

/** What a tracer is told of an upstream try. */
export interface UpstreamAttempt {
  /** The config's name of the upstream, when the request was routed. */
  readonly upstream: string | undefined;
  /** Its kind in the config (`openai`, `azure`, `openai-compatible`, `anthropic`), when routed. */
  readonly kind: string | undefined;
  /** Its base URL (host and port are recorded, never its path or query). */
  readonly url: string | undefined;
  /** The model as this upstream knows it. */
  readonly model: string;
  /** 1 for the first try. */
  readonly number: number;
}
