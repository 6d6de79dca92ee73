/**
 * One upstream exchange as undici hands it over (its dispatch handler, in place of `request()`):
 * the status and headers, then the body, which the reader takes either whole (`whole()`: chunks
 * gathered into one Buffer, no stream; the JSON relay) or as a Readable (`body`, made when first
 * asked for: streams, files, anything read piece by piece). `request()` made a Readable for every
 * answer and ran each callback through an AsyncResource: about 2% of the event loop, measured
 * (docs/performance.md, "The upstream's answer without a stream").
 *
 * Until the reader asks, up to {@link HELD_BYTES} are held and the socket is paused beyond them,
 * as a stream's buffer would. The connection's slot (fair-slots.ts) is given back when the exchange
 * ends, however it ends: the answer complete, an error, or an abort.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { errors as undiciErrors, type Dispatcher } from 'undici';
import type { LeaveSignal } from '../domain/leave-signal.js';

/** What a reader may hold unread before the socket is paused: a Readable's default buffer for bytes. */
const HELD_BYTES = 64 * 1024;

/** An upstream's answer: its status and headers, and its body read one of two ways. */
export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The body as a stream: read it to its end or destroy it (which aborts the exchange). */
  readonly body: Readable;
  /** The whole body in one Buffer, without a stream; rejects as reading `body` would fail. Use one of the two. */
  whole(): Promise<Buffer>;
}

type Waiter = { readonly resolve: (bytes: Buffer) => void; readonly reject: (error: Error) => void };

/** The dispatch handler of one exchange, and the answer it becomes once its headers arrive. */
export class UpstreamCall implements Dispatcher.DispatchHandler, UpstreamResponse {
  status = 0;
  headers: IncomingHttpHeaders = {};
  private controller: Dispatcher.DispatchController | undefined;
  /** Why the exchange was aborted by its signal (before or after it started). */
  private abortedBy: Error | undefined;
  private ended = false;
  private failure: Error | undefined;
  private held: Buffer[] = [];
  private heldBytes = 0;
  private stream: Readable | undefined;
  private wanted: Waiter | undefined;
  private readonly onAbort = (): void => this.abortBy(abortReason(this.signal));

  constructor(
    private readonly answer: (response: UpstreamResponse) => void,
    private readonly refuse: (error: Error) => void,
    /** Gives the connection's slot back (called once). */
    private release: (() => void) | undefined,
    /** A client's AbortSignal, or Tollgate's own stop (upstream-stop.ts). */
    private readonly signal: LeaveSignal,
    /** The request's body, destroyed with the exchange when it is a stream (as `request()` did). */
    private readonly requestBody: Buffer | Readable | undefined,
  ) {
    if (signal.aborted) this.abortedBy = abortReason(signal);
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortedBy !== undefined) controller.abort(this.abortedBy);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx informational answers come before the real one.
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = headers;
    this.answer(this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.stream !== undefined) {
      if (!this.stream.push(chunk)) controller.pause();
      return;
    }
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.wanted === undefined && this.heldBytes >= HELD_BYTES) controller.pause();
  }

  onResponseEnd(): void {
    this.ended = true;
    this.finish();
    if (this.stream !== undefined) this.stream.push(null);
    else if (this.wanted !== undefined) this.wanted.resolve(this.takeHeld());
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.failure = error;
    this.finish();
    if (this.requestBody instanceof Readable && !this.requestBody.destroyed) {
      this.requestBody.on('error', noop);
      this.requestBody.destroy(error);
    }
    // No status yet: the headers never came.
    if (this.status === 0) return this.refuse(error);
    // As request() did: the error reaches the reader's listeners, and none is no crash.
    if (this.stream !== undefined) this.stream.on('error', noop).destroy(error);
    else this.wanted?.reject(error);
  }

  get body(): Readable {
    if (this.stream !== undefined) return this.stream;
    if (this.wanted !== undefined) throw new Error('the upstream answer is being read whole');
    const stream = new Readable({
      read: () => this.controller?.resume(),
      destroy: (error, callback) => {
        // A reader that stops before the end aborts the exchange, and the stream reports it, as request()'s did.
        const reason = error ?? (this.ended ? null : new undiciErrors.RequestAbortedError());
        if (reason !== null) this.abortBy(reason);
        callback(reason);
      },
    });
    this.stream = stream;
    for (const chunk of this.held) stream.push(chunk);
    this.held = [];
    this.heldBytes = 0;
    if (this.failure !== undefined) stream.on('error', noop).destroy(this.failure);
    else if (this.ended) stream.push(null);
    return stream;
  }

  whole(): Promise<Buffer> {
    if (this.stream !== undefined || this.wanted !== undefined) return Promise.reject(new Error('the upstream answer is already being read'));
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(this.takeHeld());
    return new Promise<Buffer>((resolve, reject) => {
      this.wanted = { resolve, reject };
      this.controller?.resume();
    });
  }

  private takeHeld(): Buffer {
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    return held.length === 1 ? held[0]! : Buffer.concat(held);
  }

  private abortBy(reason: Error): void {
    if (this.ended || this.failure !== undefined) return;
    this.abortedBy = reason;
    // Before it started, onRequestStart aborts it.
    this.controller?.abort(reason);
  }

  /** The exchange is over: its slot given back, its signal no longer listened to. */
  private finish(): void {
    this.signal.removeEventListener('abort', this.onAbort);
    const release = this.release;
    this.release = undefined;
    release?.();
  }
}

/** The answer `inner` with other headers (Anthropic's account headers left out): its body and `whole()` are the same. */
export class ReheadedAnswer implements UpstreamResponse {
  constructor(
    private readonly inner: UpstreamResponse,
    readonly headers: Record<string, string | string[] | undefined>,
  ) {}

  get status(): number {
    return this.inner.status;
  }

  get body(): Readable {
    return this.inner.body;
  }

  whole(): Promise<Buffer> {
    return this.inner.whole();
  }
}

function abortReason(signal: LeaveSignal): Error {
  const reason: unknown = 'reason' in signal ? signal.reason : undefined;
  return reason instanceof Error ? reason : new undiciErrors.RequestAbortedError();
}

function noop(): void {}
