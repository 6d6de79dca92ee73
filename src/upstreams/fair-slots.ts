/**
 * A fair share of the upstream connection pool (with 4
 * connections, one key's 8 slow streams made another key's request wait
 * 11.5 s in undici's FIFO queue). Every upstream request takes a slot for as
 * long as it holds a connection (until its body ends). Two rules:
 *
 * - no owner (key) holds more than `perOwnerMax` slots, so a connection is
 *   left for everyone else however slow one key's streams are — a stream
 *   cannot be pre-empted once it holds a connection, so waiting alone could
 *   not bound another key's delay;
 * - a freed slot goes to the waiting owner that holds the fewest, earliest
 *   first among equals.
 *
 * A request waits at most `maxWaitMs`, then is refused (429). No I/O.
 */
import { TollgateError } from '../domain/errors.js';
import type { LeaveSignal } from '../domain/leave-signal.js';

interface Waiter {
  readonly owner: string;
  readonly grant: (release: () => void) => void;
}

export interface FairSlotOptions {
  /** Slots in all (the pool's connections). */
  readonly capacity: number;
  /** Slots one owner may hold at once (≥ 1). */
  readonly perOwnerMax: number;
  /** Longest a request waits for a slot (ms). */
  readonly maxWaitMs: number;
}

/** The error code a slot that never came carries (failedBeforeSending: nothing was sent). */
export const SLOT_WAIT_CODE = 'TOLLGATE_UPSTREAM_SLOT_WAIT';

export class FairSlots {
  private readonly held = new Map<string, number>();
  private total = 0;
  private readonly waiting: Waiter[] = [];

  constructor(private readonly options: FairSlotOptions) {}

  /** Slots held now (all owners). */
  get inUse(): number {
    return this.total;
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Waits for a slot of `owner`; resolves to its release (call once). */
  acquire(owner: string, signal?: LeaveSignal): Promise<() => void> {
    if (this.waiting.length === 0 && this.fits(owner)) return Promise.resolve(this.take(owner));
    return new Promise<() => void>((resolve, reject) => {
      const timer = setTimeout(() => {
        remove();
        reject(
          new TollgateError(
            'rate_limit_exceeded',
            `Every upstream connection this key may use is busy; the request waited ${Math.round(this.options.maxWaitMs / 1000)}s for one. Try again shortly.`,
            { headers: { 'retry-after': '1' }, cause: Object.assign(new Error('upstream slot wait timed out'), { code: SLOT_WAIT_CODE }) },
          ),
        );
      }, this.options.maxWaitMs);
      const onAbort = (): void => {
        remove();
        reject(Object.assign(new Error('aborted while waiting for an upstream connection'), { name: 'AbortError', code: SLOT_WAIT_CODE }));
      };
      const waiter: Waiter = {
        owner,
        grant: (release) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const remove = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = this.waiting.indexOf(waiter);
        if (at !== -1) this.waiting.splice(at, 1);
      };
      if (signal?.aborted === true) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      this.pump();
    });
  }

  private fits(owner: string): boolean {
    return this.total < this.options.capacity && (this.held.get(owner) ?? 0) < this.options.perOwnerMax;
  }

  private take(owner: string): () => void {
    this.total += 1;
    this.held.set(owner, (this.held.get(owner) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = (this.held.get(owner) ?? 1) - 1;
      if (left === 0) this.held.delete(owner);
      else this.held.set(owner, left);
      this.pump();
    };
  }

  /** Hands free slots to waiting owners, fewest held first. */
  private pump(): void {
    while (this.total < this.options.capacity && this.waiting.length > 0) {
      let best = -1;
      let bestHeld = Number.POSITIVE_INFINITY;
      for (let i = 0; i < this.waiting.length; i += 1) {
        const owner = this.waiting[i]!.owner;
        const held = this.held.get(owner) ?? 0;
        if (held < this.options.perOwnerMax && held < bestHeld) {
          best = i;
          bestHeld = held;
        }
      }
      if (best === -1) return;
      const [waiter] = this.waiting.splice(best, 1);
      waiter!.grant(this.take(waiter!.owner));
    }
  }
}

/** Slots one key may hold: `share` of the pool, leaving at least one for everyone else (when there are two). */
export function perOwnerMaxOf(capacity: number, share: number): number {
  if (capacity <= 1) return 1;
  return Math.max(1, Math.min(capacity - 1, Math.floor(capacity * share)));
}
