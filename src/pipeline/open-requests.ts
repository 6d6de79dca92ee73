/**
 * Requests sent upstream and not settled yet, each with how to stop it. A
 * client that leaves no longer ends its request — Tollgate reads the answer on
 * until its usage (README, "The ledger") — so nothing else would end these at
 * shutdown: main.ts waits for them within its deadline, then Tollgate's
 * close() stops the rest (upstream aborted, settled at the reservation), so a
 * clean shutdown leaves no row pending. No I/O.
 */
import type { AdmittedRequest } from './context.js';

export class OpenRequests {
  private readonly stops = new Map<AdmittedRequest, () => void>();
  private waiters: Array<() => void> = [];

  /** Requests open now. */
  get size(): number {
    return this.stops.size;
  }

  /** Notes an open request and how to stop it (a later call replaces the stop: the relay knows better). */
  track(request: AdmittedRequest, stop: () => void): void {
    if (!request.settled) this.stops.set(request, stop);
  }

  /** The request was settled (or handed to the background poller). */
  done(request: AdmittedRequest): void {
    if (!this.stops.delete(request) || this.stops.size > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves once no request is open. */
  idle(): Promise<void> {
    if (this.stops.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops every open request (each stop settles its request); returns how many there were. */
  stopAll(onError: (error: unknown) => void = () => undefined): number {
    const stops = [...this.stops.values()];
    for (const stop of stops) {
      try {
        stop();
      } catch (error) {
        onError(error);
      }
    }
    return stops.length;
  }
}
