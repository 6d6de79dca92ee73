/**
 * A per-upstream circuit breaker for fallbacks (README, "Upstreams"). After
 * `failures` consecutive failed attempts an upstream is skipped for
 * `cooldownMs`; then one probe may go (half-open): its success closes the
 * breaker, its failure opens it again. An upstream that says when to come
 * back (`Retry-After` on a 429/503) is skipped until then, bounded by the
 * config's `maxRetryAfterMs`, whatever its failure count.
 *
 * Pure: the clock is an argument, so tests move time by hand.
 */
export interface BreakerSettings {
  readonly failures: number;
  readonly cooldownMs: number;
}

export class UpstreamBreaker {
  private consecutive = 0;
  /** Skipped until this time (ms); 0 = not skipped. */
  private closedAfter = 0;
  /** An open breaker's cooldown ended and one probe is out. */
  private probing = false;
  private open = false;

  constructor(private readonly settings: BreakerSettings) {}

  /** May an attempt go to this upstream now? In half-open state, to one attempt at a time. */
  tryAcquire(now: number): boolean {
    if (now < this.closedAfter) return false;
    if (!this.open) return true;
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  /** True while attempts are refused (open and cooling down, or a Retry-After pending). */
  isSkipping(now: number): boolean {
    return now < this.closedAfter || (this.open && this.probing);
  }

  /** The upstream answered (anything but a 429, 5xx or network failure). */
  recordSuccess(): void {
    this.consecutive = 0;
    this.open = false;
    this.probing = false;
    this.closedAfter = 0;
  }

  /**
   * The attempt failed. `retryAfterMs`: how long the upstream asked to be left
   * alone (already bounded by the caller), if it said.
   */
  recordFailure(now: number, retryAfterMs?: number): void {
    this.consecutive += 1;
    const wasProbe = this.open && this.probing;
    this.probing = false;
    if (wasProbe || this.consecutive >= this.settings.failures) {
      this.open = true;
      this.closedAfter = Math.max(this.closedAfter, now + this.settings.cooldownMs);
    }
    if (retryAfterMs !== undefined && retryAfterMs > 0) this.closedAfter = Math.max(this.closedAfter, now + retryAfterMs);
  }

  /** The attempt ended without telling anything about the upstream (the client left): a probe slot is freed. */
  release(): void {
    this.probing = false;
  }
}

/**
 * `Retry-After` (seconds, or an HTTP date) or `retry-after-ms` in milliseconds,
 * bounded by `maxMs`; undefined when absent or unreadable.
 */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>, now: number, maxMs: number): number | undefined {
  const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.min(maxMs, Math.ceil(Number(ms)));
  const text = first(headers['retry-after'])?.trim();
  if (text === undefined || text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.min(maxMs, Math.ceil(Number(text) * 1000));
  // An HTTP date names its day and month; Date.parse alone would read "-5" as a year.
  const at = /^[A-Za-z]{3},/.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.min(maxMs, Math.max(0, at - now));
}
