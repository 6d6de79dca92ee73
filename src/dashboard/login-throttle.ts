/**
 * A small brake on guessing the admin token from the login form: after a few
 * wrong tokens from one address in a window, that address is refused until
 * the window ends. (The token is long and random, so this is about noise in
 * the logs and wasted CPU more than about the odds of a guess.)
 */

/** How hard the login form brakes (defaults: 10 wrong tokens per 10 minutes per address). */
export interface ThrottleOptions {
  /** Wrong tokens allowed per address per window. */
  readonly maxFailures?: number;
  readonly windowMs?: number;
  /** Addresses remembered at most (a flood of addresses must not grow memory). */
  readonly maxAddresses?: number;
}

interface Window {
  failures: number;
  startedAt: number;
}

export class LoginThrottle {
  private readonly maxFailures: number;
  private readonly windowMs: number;
  private readonly maxAddresses: number;
  private readonly windows = new Map<string, Window>();

  constructor(options: ThrottleOptions = {}) {
    this.maxFailures = options.maxFailures ?? 10;
    this.windowMs = options.windowMs ?? 10 * 60_000;
    this.maxAddresses = options.maxAddresses ?? 10_000;
  }

  /** Milliseconds until `address` may try again, or 0 when it may try now. */
  retryAfterMs(address: string, now: number): number {
    const window = this.windows.get(address);
    if (window === undefined || now - window.startedAt >= this.windowMs) return 0;
    return window.failures >= this.maxFailures ? window.startedAt + this.windowMs - now : 0;
  }

  /** Counts a wrong token from `address`. */
  recordFailure(address: string, now: number): void {
    const window = this.windows.get(address);
    if (window === undefined || now - window.startedAt >= this.windowMs) {
      this.windows.delete(address);
      if (this.windows.size >= this.maxAddresses) this.prune(now);
      this.windows.set(address, { failures: 1, startedAt: now });
      return;
    }
    window.failures += 1;
  }

  /** A correct token clears the address's count. */
  recordSuccess(address: string): void {
    this.windows.delete(address);
  }

  private prune(now: number): void {
    for (const [address, window] of this.windows) {
      if (now - window.startedAt >= this.windowMs) this.windows.delete(address);
    }
    // Still full: forget the oldest entries (Map keeps insertion order).
    for (const address of this.windows.keys()) {
      if (this.windows.size < this.maxAddresses) break;
      this.windows.delete(address);
    }
  }
}
