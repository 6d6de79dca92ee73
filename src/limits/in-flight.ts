/**
 * Requests in flight per key and per tenant: a key holding
 * hundreds of slow streams occupies the proxy's memory, sockets and upstream
 * connections however few tokens it spends. A request takes a slot of its key
 * (and of its tenant, when the tenant sets a cap) from admission until it is
 * settled; one over the cap waits for a slot, in arrival order, at most
 * `maxWaitMs`, then gets a 429. No I/O.
 */
import { TollgateError } from '../domain/errors.js';
import type { LeaveSignal } from '../domain/leave-signal.js';

interface Waiter {
  readonly ready: () => boolean;
  readonly grant: () => void;
}

export interface InFlightOptions {
  /** Cap of a key whose policy sets none. */
  readonly defaultKeyMax: number;
  /** Longest a request waits for a slot (ms). */
  readonly maxWaitMs: number;
}

/** Who a request counts against: its key and (when capped) its tenant. */
export interface InFlightOwner {
  readonly keyId: string;
  readonly keyMax: number | undefined;
  readonly tenantId: string | null;
  readonly tenantMax: number | undefined;
}

export class InFlightLimits {
  private readonly counts = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(private readonly options: InFlightOptions) {}

  /** Requests in flight for a key or tenant id (`key:<id>`, `tenant:<id>`). */
  current(id: string): number {
    return this.counts.get(id) ?? 0;
  }

  /** Waits for a slot; resolves to its release (idempotent), or rejects with a 429 after the longest wait. */
  acquire(owner: InFlightOwner, signal?: LeaveSignal): Promise<() => void> {
    const caps: Array<readonly [string, number]> = [[`key:${owner.keyId}`, owner.keyMax ?? this.options.defaultKeyMax]];
    if (owner.tenantId !== null && owner.tenantMax !== undefined) caps.push([`tenant:${owner.tenantId}`, owner.tenantMax]);
    const ready = (): boolean => caps.every(([id, max]) => this.current(id) < max);
    const take = (): (() => void) => {
      for (const [id] of caps) this.counts.set(id, this.current(id) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        for (const [id] of caps) {
          const left = this.current(id) - 1;
          if (left <= 0) this.counts.delete(id);
          else this.counts.set(id, left);
        }
        this.pump();
      };
    };
    if (ready()) return Promise.resolve(take());
    return new Promise<() => void>((resolve, reject) => {
      const remove = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = this.waiting.indexOf(waiter);
        if (at !== -1) this.waiting.splice(at, 1);
      };
      const timer = setTimeout(() => {
        remove();
        const [id, max] = caps.find(([capId, capMax]) => this.current(capId) >= capMax) ?? caps[0]!;
        const who = id.startsWith('tenant:') ? 'its tenant' : 'this key';
        reject(
          new TollgateError(
            'rate_limit_exceeded',
            `Too many requests in flight: ${who} may have ${max} at once, and this one waited ${Math.round(this.options.maxWaitMs / 1000)}s for one to finish. Try again shortly.`,
            { headers: { 'retry-after': '1' } },
          ),
        );
      }, this.options.maxWaitMs);
      const onAbort = (): void => {
        remove();
        reject(new TollgateError('client_closed_request', 'The client closed the request.'));
      };
      const waiter: Waiter = {
        ready,
        grant: () => {
          remove();
          resolve(take());
        },
      };
      if (signal?.aborted === true) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Grants slots to waiters that fit now, in arrival order. */
  private pump(): void {
    for (let i = 0; i < this.waiting.length;) {
      const waiter = this.waiting[i]!;
      if (waiter.ready())
        waiter.grant(); // removes itself
      else i += 1;
    }
  }
}
