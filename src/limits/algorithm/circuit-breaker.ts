/**
 * A small circuit breaker so requests stop waiting on a dead Redis: after
 * `threshold` consecutive failures it opens for `cooldownMs`, then lets one
 * probe through (half-open); a success closes it, a failure reopens it.
 * Pure: the clock is passed in.
 */
export type BreakerState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  state: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
  private probing = false;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
  ) {}

  /** True if a call may be sent now; in half-open state only one probe at a time. */
  allowCall(now: number): boolean {
    if (this.state === 'closed') return true;
    if (this.state === 'open') {
      if (now - this.openedAt < this.cooldownMs) return false;
      this.state = 'half-open';
      this.probing = false;
    }
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  /** True while requests should not wait for Redis at all. */
  isOpen(now: number): boolean {
    return this.state === 'open' && now - this.openedAt < this.cooldownMs;
  }

  /** Ms until the next probe may go out (0 when closed). */
  remainingMs(now: number): number {
    return this.state === 'open' ? Math.max(0, this.cooldownMs - (now - this.openedAt)) : 0;
  }

  /** Records a successful call; returns true if this closed an open breaker. */
  recordSuccess(): boolean {
    const wasOpen = this.state !== 'closed';
    this.state = 'closed';
    this.failures = 0;
    this.probing = false;
    return wasOpen;
  }

  /** Records a failed call; returns true if this opened the breaker. */
  recordFailure(now: number): boolean {
    this.failures += 1;
    this.probing = false;
    if (this.state === 'half-open' || (this.state === 'closed' && this.failures >= this.threshold)) {
      this.state = 'open';
      this.openedAt = now;
      return true;
    }
    return false;
  }
}
