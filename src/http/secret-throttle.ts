/**
 * One brake on guessing secrets, per client address, shared by every surface
 * that checks a secret a client presents: the dashboard's login form (the
 * admin token or a tenant's dashboard token), the admin API's bearer token,
 * the /metrics token (src/http/secret-check.ts wires it in).
 *
 * Each address has a token bucket of *checks* (src/limits/algorithm/token-bucket.ts):
 * `burst` at once, then `perSecond` more each second. A presented secret is
 * compared only when a check is granted, so an address that is out of checks
 * learns nothing and costs nothing: sustained guessing runs at `perSecond`.
 * A right secret gives its check back, so the right token never uses up its
 * own address's checks, and a refused attempt is told to come back when the
 * next check is earned (a second at the default rate), never minutes later.
 * The guarantees, tested: wrong secrets compared per address over any window
 * Δ ≤ burst + perSecond·Δ; after wrong attempts stop, the right secret is
 * compared again within 1/perSecond seconds.
 *
 * IPv6 clients are counted per /64 (one host or site usually holds a whole
 * /64, and would otherwise have 2^64 buckets). Memory is bounded: past
 * `maxAddresses` the full buckets (which remember nothing) are dropped, then
 * the least recently used. Pure: the clock is an argument.
 */
import { isIPv6 } from 'node:net';
import {
  createBucketShape,
  createBucketState,
  isBucketFull,
  refundTokens,
  takeTokens,
  type BucketShape,
  type BucketState,
} from '../limits/algorithm/token-bucket.js';

export interface SecretThrottleOptions {
  /** Checks an address may make at once (default 10). */
  readonly burst?: number;
  /** Checks an address earns back per second (default 1). */
  readonly perSecond?: number;
  /** Addresses remembered at most (default 10 000): a flood of addresses must not grow memory. */
  readonly maxAddresses?: number;
}

const DEFAULT_SECRET_THROTTLE = { burst: 10, perSecond: 1, maxAddresses: 10_000 } as const;

export class SecretThrottle {
  private readonly shape: BucketShape;
  private readonly maxAddresses: number;
  /** Per throttled address (or IPv6 /64), in least-recently-used order. */
  private readonly buckets = new Map<string, BucketState>();

  constructor(options: SecretThrottleOptions = {}) {
    this.shape = createBucketShape(options.perSecond ?? DEFAULT_SECRET_THROTTLE.perSecond, options.burst ?? DEFAULT_SECRET_THROTTLE.burst);
    this.maxAddresses = Math.max(1, options.maxAddresses ?? DEFAULT_SECRET_THROTTLE.maxAddresses);
  }

  /**
   * Takes one check for `address` at `now` (ms): 0 when granted (the caller
   * may compare the secret now), otherwise the milliseconds until the next
   * check is earned (nothing may be compared before then).
   */
  take(address: string, now: number): number {
    const key = throttleKeyOf(address);
    let state = this.buckets.get(key);
    if (state === undefined) {
      if (this.buckets.size >= this.maxAddresses) this.makeRoom(now);
      state = createBucketState(this.shape, now);
    } else {
      // Re-inserted below, so the map's order is least recently used first.
      this.buckets.delete(key);
    }
    this.buckets.set(key, state);
    return takeTokens(this.shape, state, 1, now);
  }

  /** Gives `address` back the check it took: the secret it presented was right. */
  refund(address: string, now: number): void {
    const state = this.buckets.get(throttleKeyOf(address));
    if (state !== undefined) refundTokens(this.shape, state, 1, now);
  }

  /** Addresses remembered now (bounded by `maxAddresses`). */
  get size(): number {
    return this.buckets.size;
  }

  /** Drops every full bucket (a fresh one is the same), then the least recently used down to 90% of the bound. */
  private makeRoom(now: number): void {
    for (const [key, state] of this.buckets) if (isBucketFull(this.shape, state, now)) this.buckets.delete(key);
    const target = Math.floor(this.maxAddresses * 0.9);
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= target) break;
      this.buckets.delete(key);
    }
  }
}

/** The bucket an address counts in: an IPv4 address (or anything else) itself, an IPv6 address its /64. */
export function throttleKeyOf(address: string): string {
  const bare = address.split('%')[0]!;
  if (!isIPv6(bare)) return address;
  const [head = '', tail] = bare.split('::');
  const count = (part: string): number => (part === '' ? 0 : part.split(':').reduce((sum, piece) => sum + (piece.includes('.') ? 2 : 1), 0));
  const headParts = head === '' ? [] : head.split(':');
  const groups = tail === undefined ? headParts : [...headParts, ...Array<string>(8 - count(head) - count(tail)).fill('0')];
  const prefix = groups.slice(0, 4);
  while (prefix.length < 4) prefix.push('0');
  return `${prefix.map((group) => parseInt(group, 16).toString(16)).join(':')}::/64`;
}
