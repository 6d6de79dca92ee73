/**
 * How many request bodies are being taken in at once: read from
 * the socket and parsed, until the request's estimate is known. Large bodies
 * are parsed on a worker thread, so they no longer block the event loop —
 * but they still take memory and worker time, so:
 *
 * - **per key**, at most `largePerKey` bodies of `largeBytes` or more are
 *   taken in at once (one tenant's flood of 20 MB bodies queues behind
 *   itself, not in front of everyone's large bodies);
 * - **per process**, the bytes of bodies being taken in stay within
 *   `memoryBytes`, and one key holds at most half of them.
 *
 * A body asks before it is read (a large one, by its declared length, takes
 * its key's slot then) and as its bytes arrive (memory is counted as received,
 * not as declared: a slow upload holds only what it sent); one that does not
 * fit waits, in arrival order, at most `maxWaitMs` with its bytes unread (the
 * socket holds the client back), then is refused:
 * 429 `rate_limit_exceeded` when its key has too many large bodies in, 503
 * `server_busy` when the process's memory for bodies is taken. No I/O.
 */
import { TollgateError } from '../domain/errors.js';
import type { BodyAllowance } from './body.js';
import type { LeaveSignal } from '../domain/leave-signal.js';

/** What counts as a large body for a key's bound: bodies this size take real worker time to parse (tens of ms for dense ones). */
export const LARGE_BODY_BYTES = 1024 * 1024;

export interface BodyIntakeOptions {
  /** Bodies at least this large count against their key's `largePerKey`. */
  readonly largeBytes: number;
  /** Large bodies one key may have being read or parsed at once. */
  readonly largePerKey: number;
  /** Bytes of bodies being read or parsed, all keys together. */
  readonly memoryBytes: number;
  /** Longest a body waits for a slot or for memory before it is refused (ms). */
  readonly maxWaitMs: number;
}

/**
 * Keys whose bytes went back to zero stay in the per-key map, up to this many: deleting the one busy
 * key's entry after each body and adding it back with the next shrank and grew V8's table every
 * request (docs/performance.md, "Slow paths the profile named").
 */
const IDLE_KEYS_KEPT = 1024;

/** Memory is granted in steps of at least this much, so a chunked body does not ask for every chunk. */
const GRANT_STEP = 256 * 1024;

/** A body being taken in: its allowance, and {@link IntakeTicket.release} once it is parsed (or refused). */
export interface IntakeTicket extends BodyAllowance {
  release(): void;
}

interface Holder {
  readonly keyId: string;
  /** Bytes granted so far. */
  granted: number;
  /** Holds one of its key's large-body slots. */
  large: boolean;
  released: boolean;
}

interface Waiter {
  readonly holder: Holder;
  readonly total: number;
  readonly bytes: number;
  readonly grant: () => void;
}

export class BodyIntake {
  private used = 0;
  private readonly usedByKey = new Map<string, number>();
  /** The per-key map's size past which its idle keys are dropped. */
  private sweepAt = IDLE_KEYS_KEPT;
  private readonly largeByKey = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(private readonly options: BodyIntakeOptions) {}

  /** Bytes of bodies being taken in now, and large bodies of one key. */
  get bytesInUse(): number {
    return this.used;
  }

  /** Keys the per-key count remembers (those with bytes in, and up to {@link IDLE_KEYS_KEPT} idle ones). */
  get keysRemembered(): number {
    return this.usedByKey.size;
  }

  largeBodiesOf(keyId: string): number {
    return this.largeByKey.get(keyId) ?? 0;
  }

  /** A ticket for one body of `keyId`; `signal` aborts a wait (the client left). */
  open(keyId: string, signal?: LeaveSignal): IntakeTicket {
    const holder: Holder = { keyId, granted: 0, large: false, released: false };
    return {
      grow: (received, declared) => this.grow(holder, received, declared, signal),
      release: () => this.release(holder),
    };
  }

  /**
   * `received` bytes are in (memory is granted for them, in steps); the body is
   * `declared` long, when known (a large one takes its key's slot before a byte is read).
   */
  private grow(holder: Holder, received: number, declared: number | undefined, signal: LeaveSignal | undefined): Promise<void> | undefined {
    if (holder.released) return undefined;
    const total = Math.max(received, declared ?? 0);
    const bytes =
      received <= holder.granted ? holder.granted : Math.min(Math.max(received, holder.granted + GRANT_STEP), Math.max(received, this.options.memoryBytes));
    if (bytes === holder.granted && !this.needsLargeSlot(holder, total)) return undefined;
    // A body that fits goes ahead of waiters that do not (they wait for others to finish, not for it).
    if (this.fits(holder, total, bytes)) {
      this.take(holder, total, bytes);
      return undefined;
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        holder,
        total,
        bytes,
        grant: () => {
          remove();
          this.take(holder, total, bytes);
          resolve();
        },
      };
      const remove = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = this.waiting.indexOf(waiter);
        if (at !== -1) this.waiting.splice(at, 1);
      };
      const onAbort = (): void => {
        remove();
        reject(new TollgateError('client_closed_request', 'The client closed the request while its body waited to be read.'));
        this.pump();
      };
      const timer = setTimeout(() => {
        remove();
        reject(this.refusal(holder, total));
        this.pump();
      }, this.options.maxWaitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private needsLargeSlot(holder: Holder, total: number): boolean {
    return !holder.large && total >= this.options.largeBytes;
  }

  private fits(holder: Holder, total: number, bytes: number): boolean {
    if (this.needsLargeSlot(holder, total) && this.largeBodiesOf(holder.keyId) >= this.options.largePerKey) return false;
    const more = bytes - holder.granted;
    // A body larger than the whole budget still gets in, alone.
    if (this.used === 0) return true;
    if (this.used + more > this.options.memoryBytes) return false;
    return (this.usedByKey.get(holder.keyId) ?? 0) + more <= this.options.memoryBytes / 2;
  }

  private take(holder: Holder, total: number, bytes: number): void {
    const more = bytes - holder.granted;
    if (this.needsLargeSlot(holder, total)) {
      holder.large = true;
      this.largeByKey.set(holder.keyId, this.largeBodiesOf(holder.keyId) + 1);
    }
    holder.granted = bytes;
    this.used += more;
    this.usedByKey.set(holder.keyId, (this.usedByKey.get(holder.keyId) ?? 0) + more);
  }

  private release(holder: Holder): void {
    if (holder.released) return;
    holder.released = true;
    this.used -= holder.granted;
    this.usedByKey.set(holder.keyId, Math.max(0, (this.usedByKey.get(holder.keyId) ?? 0) - holder.granted));
    if (this.usedByKey.size > this.sweepAt) this.forgetIdleKeys();
    if (holder.large) {
      const large = this.largeBodiesOf(holder.keyId) - 1;
      if (large <= 0) this.largeByKey.delete(holder.keyId);
      else this.largeByKey.set(holder.keyId, large);
    }
    holder.granted = 0;
    if (this.waiting.length === 0) return;
    // A waiter of the released holder itself (it was refused meanwhile) is dropped.
    for (const waiter of this.waiting.filter((w) => w.holder === holder)) this.waiting.splice(this.waiting.indexOf(waiter), 1);
    this.pump();
  }

  /**
   * Drops the keys that hold nothing now: the map stays within twice the keys in use (and
   * {@link IDLE_KEYS_KEPT}), and a sweep comes only after as many keys again were added.
   */
  private forgetIdleKeys(): void {
    for (const [keyId, bytes] of this.usedByKey) if (bytes === 0) this.usedByKey.delete(keyId);
    this.sweepAt = Math.max(IDLE_KEYS_KEPT, 2 * this.usedByKey.size);
  }

  /** Grants, in arrival order, every waiter that fits now. */
  private pump(): void {
    for (let i = 0; i < this.waiting.length;) {
      const waiter = this.waiting[i]!;
      if (this.fits(waiter.holder, waiter.total, waiter.bytes))
        waiter.grant(); // removes it
      else i += 1;
    }
  }

  private refusal(holder: Holder, total: number): TollgateError {
    const headers = { 'retry-after': '1', connection: 'close' };
    const seconds = Math.round(this.options.maxWaitMs / 1000);
    if (this.needsLargeSlot(holder, total) && this.largeBodiesOf(holder.keyId) >= this.options.largePerKey) {
      return new TollgateError(
        'rate_limit_exceeded',
        `Too many large request bodies at once: this key may send ${this.options.largePerKey} bodies of ${megabytes(this.options.largeBytes)} or more at a time, and this one waited ${seconds}s for one to finish. Try again shortly.`,
        { headers },
      );
    }
    return new TollgateError('server_busy', `Tollgate is reading too many request bodies at once; this one waited ${seconds}s. Try again shortly.`, {
      headers,
    });
  }
}

function megabytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${+(bytes / (1024 * 1024)).toFixed(1)} MB` : `${Math.round(bytes / 1024)} KB`;
}
