/**
 * Rate-limit response headers — pure.
 *
 * `RateLimit-Policy` and `RateLimit` follow draft-ietf-httpapi-ratelimit-headers-10
 * (structured-field Lists of Items whose value is a String, the policy name):
 *   RateLimit-Policy: "burst";q=100;w=60      q = quota, w = window in seconds
 *   RateLimit: "burst";r=50;t=30             r = remaining, t = seconds until more quota
 * (draft-10 §3–4, https://www.ietf.org/archive/id/draft-ietf-httpapi-ratelimit-headers-10.txt).
 * For a token bucket: q = burst, w = seconds for an empty bucket to refill
 * (burst/rate), r = whole units left, t = seconds until full on success, until
 * the request would fit on refusal. The draft's `qu` registry only knows
 * requests/bytes/concurrency, so token and USD limits say their unit in a
 * vendor-prefixed parameter (`tollgate-unit`), as §3.1 recommends.
 *
 * On refusal: `Retry-After` (RFC 9110 delay-seconds) and `retry-after-ms`
 * (read first by the OpenAI SDKs), both stretched by a deterministic per-key
 * jitter of up to +50% derived from the key id, so clients that were
 * refused together do not all come back together; and `x-tollgate-limit`
 * naming the refusing limit.
 */
import type { AcquireResult, BucketSnapshot } from '../limiter.js';

/** Header names, lower-case as Node and Hono emit them. */
const RATE_LIMIT_HEADERS = {
  policy: 'ratelimit-policy',
  limit: 'ratelimit',
  retryAfter: 'retry-after',
  retryAfterMs: 'retry-after-ms',
  refusingLimit: 'x-tollgate-limit',
} as const;

/**
 * Headers for a limiter decision, on allowed and refused responses alike.
 * `jitterSeed` is the key id: the same key always gets the same jitter.
 */
export function buildRateLimitHeaders(result: AcquireResult, jitterSeed: string): Record<string, string> {
  const headers: Record<string, string> = {};
  const tightest = result.ok ? pickTightest(result.states) : result.states.find((s) => s.bucket.id === result.refusedBy.id);
  if (tightest) {
    const seconds = result.ok ? Math.ceil(tightest.resetMs / 1000) : Math.ceil(result.retryAfterMs / 1000);
    headers[RATE_LIMIT_HEADERS.policy] = formatPolicyItem(tightest);
    headers[RATE_LIMIT_HEADERS.limit] = `${formatString(tightest.bucket.limitName)};r=${Math.max(0, Math.floor(tightest.remaining))};t=${seconds}`;
  }
  if (!result.ok) {
    headers[RATE_LIMIT_HEADERS.refusingLimit] = result.refusedBy.limitName;
    if (result.reason !== 'never_fits') {
      const retry = computeJitteredRetry(result.retryAfterMs, jitterSeed);
      headers[RATE_LIMIT_HEADERS.retryAfter] = String(retry.seconds);
      headers[RATE_LIMIT_HEADERS.retryAfterMs] = String(retry.ms);
    }
  }
  return headers;
}

/**
 * The retry delay a client is told: `retryAfterMs` stretched by a jitter in
 * [0, 50%) derived from `seed`, as whole ms and as whole seconds (rounded up,
 * so never earlier than the bucket allows).
 */
export function computeJitteredRetry(retryAfterMs: number, seed: string): { seconds: number; ms: number } {
  const base = Math.max(0, Math.ceil(retryAfterMs));
  const ms = Math.ceil(base * (1 + computeJitterFraction(seed)));
  return { ms, seconds: Math.ceil(ms / 1000) };
}

/** A fraction in [0, 0.5) fixed per seed (FNV-1a 32-bit hash). */
export function computeJitterFraction(seed: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) {
    hash ^= seed.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return ((hash >>> 0) / 2 ** 32) * 0.5;
}

/** The snapshot nearest to refusing: smallest remaining share of the burst, then the longest reset. */
export function pickTightest(states: readonly BucketSnapshot[]): BucketSnapshot | undefined {
  let best: BucketSnapshot | undefined;
  for (const state of states) {
    if (!best) {
      best = state;
      continue;
    }
    const share = state.remaining / state.burst;
    const bestShare = best.remaining / best.burst;
    if (share < bestShare || (share === bestShare && state.resetMs > best.resetMs)) best = state;
  }
  return best;
}

function formatPolicyItem(state: BucketSnapshot): string {
  const windowSeconds = Math.max(1, Math.ceil(state.burst / state.ratePerSec));
  let item = `${formatString(state.bucket.limitName)};q=${state.burst};w=${windowSeconds}`;
  const unit = state.bucket.unit;
  if (unit === 'tokens') item += ';tollgate-unit="tokens"';
  else if (unit === 'usd') item += ';tollgate-unit="usd-micros"';
  return item;
}

/** An sf-string: printable ASCII only, with `\` and `"` escaped (RFC 9651 §3.3.3). */
function formatString(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?');
  return `"${printable.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
