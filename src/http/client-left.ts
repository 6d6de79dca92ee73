/**
 * The client's leaving, as the request path waits on it: whether it left, and listeners called
 * once when it does. An AbortController's signal did this before, made for every request: in
 * Node 20 making one costs about 5 µs and each `addEventListener` on it about 4 µs more (measured
 * alone, docs/performance.md "The client's leaving without an AbortSignal"), for a leaving that
 * rarely comes. This is an EventEmitter, which costs about 0.1 µs with a listener; where an API
 * needs a real AbortSignal (an upstream call of the batch or model routes) the client request
 * makes one from it on demand (src/http/client-request.ts).
 */
import { EventEmitter } from 'node:events';
import type { LeaveSignal } from '../domain/leave-signal.js';

export class ClientLeft extends EventEmitter implements LeaveSignal {
  private left = false;

  /** True once the client has left. */
  get aborted(): boolean {
    return this.left;
  }

  /** The client left (once; later calls do nothing). */
  leave(): void {
    if (this.left) return;
    this.left = true;
    this.emit('abort');
  }

  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void {
    if (options?.once === true) this.once(type, listener);
    else this.on(type, listener);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    this.off(type, listener);
  }
}

/** An AbortController aborted when (or already if) the client left, for an API that takes only an AbortSignal. */
export function abortControllerOf(left: ClientLeft): AbortController {
  const controller = new AbortController();
  if (left.aborted) controller.abort();
  else left.once('abort', () => controller.abort());
  return controller;
}
