/**
 * Requests sent upstream and not settled yet, each with how to stop it. A
 * client that leaves no longer ends its request — Tollgate reads the answer on
 * until its usage (README, "The ledger") — so nothing else would end these at
 * shutdown: main.ts waits for them within its deadline, then Tollgate's
 * close() stops the rest (upstream aborted, settled at the reservation), so a
 * clean shutdown leaves no row pending. No I/O.
 *
 * Kept as a linked list found through a WeakMap, not in a Map: a Map that
 * every request enters and leaves reallocates its table as it goes, and a
 * discarded table that had reached the old generation still points at the
 * requests that were open then, so each scavenge kept and promoted their
 * whole graphs until the next full collection. Measured (1 KB chat, c=16):
 * 1.73 MB promoted per scavenge with the Map, 1.32 MB without — 4.3 ms
 * scavenges against 3.1 ms.
 */
import type { AdmittedRequest } from './context.js';

interface Entry {
  stop: () => void;
  prev: Entry | undefined;
  next: Entry | undefined;
}

export class OpenRequests {
  private readonly entries = new WeakMap<AdmittedRequest, Entry>();
  /** The most recently opened request first. */
  private head: Entry | undefined;
  private count = 0;
  private waiters: Array<() => void> = [];

  /** Requests open now. */
  get size(): number {
    return this.count;
  }

  /** Notes an open request and how to stop it (a later call replaces the stop: the relay knows better). */
  track(request: AdmittedRequest, stop: () => void): void {
    if (request.settled) return;
    const known = this.entries.get(request);
    if (known !== undefined) {
      known.stop = stop;
      return;
    }
    const entry: Entry = { stop, prev: undefined, next: this.head };
    if (this.head !== undefined) this.head.prev = entry;
    this.head = entry;
    this.count += 1;
    this.entries.set(request, entry);
  }

  /** The request was settled (or handed to the background poller). */
  done(request: AdmittedRequest): void {
    const entry = this.entries.get(request);
    if (entry === undefined) return;
    this.entries.delete(request);
    if (entry.prev === undefined) this.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next !== undefined) entry.next.prev = entry.prev;
    // A left entry holds nothing (not its neighbours, not its stop's closure).
    entry.prev = undefined;
    entry.next = undefined;
    entry.stop = noop;
    this.count -= 1;
    if (this.count > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves once no request is open. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops every open request (each stop settles its request); returns how many there were. */
  stopAll(onError: (error: unknown) => void = () => undefined): number {
    const stops: Array<() => void> = [];
    for (let entry = this.head; entry !== undefined; entry = entry.next) stops.push(entry.stop);
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

function noop(): void {}
