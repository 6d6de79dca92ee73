/**
 * Tollgate's own stop of an upstream request — a stream cut at its cost cap,
 * a shutdown — never the client's leaving (src/pipeline/forward.ts). A
 * {@link LeaveSignal}, as the client's AbortSignal is, so the upstream call
 * (upstream-answer.ts) listens to either the same way; an EventEmitter
 * underneath: in Node 20 an AbortController's signal (an EventTarget) costs
 * ~2.7 µs to make on every request, for a stop that almost never comes; this
 * costs ~0.1 µs.
 */
import { EventEmitter } from 'node:events';
import type { LeaveSignal } from '../domain/leave-signal.js';

export class UpstreamStop extends EventEmitter implements LeaveSignal {
  private stopped = false;

  /** As an AbortSignal's: a request sent after the stop is aborted at once. */
  get aborted(): boolean {
    return this.stopped;
  }

  /** Stops the upstream request (once; later calls do nothing). */
  abort(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.emit('abort');
  }

  /** Calls `listener` once, on the stop. */
  addEventListener(type: 'abort', listener: () => void): void {
    this.once(type, listener);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    this.removeListener(type, listener);
  }
}
