/**
 * The one wide event of the request path: "this request is finished", sent
 * once per request that passed authentication — refused before forwarding,
 * or forwarded and settled. Metrics, the request log and the live limit view
 * subscribe to it; the stages themselves never write metrics or log lines.
 */
import type { Endpoint } from '../endpoints.js';
import type { Estimate } from '../estimate/index.js';
import type { Caller } from '../domain/caller.js';
import type { FinalStatus, RejectionReason, UsageSource } from '../storage/ledger.js';
import type { Usage } from '../dialects/usage.js';
import type { Attempt } from './context.js';

interface FinishedBase {
  readonly requestId: string;
  readonly endpoint: Endpoint;
  readonly caller: Caller;
  readonly model: string;
  readonly stream: boolean;
  readonly startedAt: number;
  readonly completedAt: number;
  /** Milliseconds the limiter took to decide, when the caller has limits and it was asked. */
  readonly decisionMs: number | undefined;
}

/** Refused before anything went upstream: no cost, one `rejected`/`invalid_request` ledger row. */
interface RequestRefused extends FinishedBase {
  readonly kind: 'refused';
  /** The error code the client got (rate_limit_exceeded, invalid_json, …). */
  readonly code: string;
  readonly httpStatus: number;
  readonly reason: RejectionReason;
}

/** Forwarded upstream and settled at its actual cost. */
interface RequestSettled extends FinishedBase {
  readonly kind: 'settled';
  readonly outcome: FinalStatus;
  /** The upstream's HTTP status, or null when it never answered. */
  readonly status: number | null;
  readonly estimate: Estimate;
  readonly usage: Usage;
  readonly costMicros: number;
  readonly usageSource: UsageSource;
  readonly sentAt: number;
  readonly ttftMs: number | null;
  readonly upstreamRequestId: string | null;
  readonly errorCode: string | null;
  /** The upstream that answered (or was tried last), when the request was routed. */
  readonly upstream?: string;
  /** Every try of an upstream, in order. */
  readonly attempts?: readonly Attempt[];
}

export type RequestFinished = RequestRefused | RequestSettled;

export type FinishedListener = (event: RequestFinished) => void;

/** Synchronous fan-out of finished requests. A failing listener never fails the request. */
export class RequestEvents {
  private readonly listeners: FinishedListener[] = [];

  constructor(private readonly onListenerError: (error: unknown) => void = () => undefined) {}

  /** Adds a listener; returns a function that removes it. */
  subscribe(listener: FinishedListener): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  emit(event: RequestFinished): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}
