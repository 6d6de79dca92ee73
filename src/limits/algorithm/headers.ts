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
 * (read first by the OpenAI and Anthropic SDKs and the AI SDK), both
 * stretched by a deterministic per-key jitter of up to +50% derived from the
 * key id, so clients that were refused together do not all come back
 * together, and both held under a minute: the AI SDK and older openai-node
 * releases honour `retry-after-ms` only below 60 000, the Python SDKs up to
 * 60 s, and otherwise fall back to a burst of short retries. A longer wait is answered with the ceiling (the client comes
 * back, is refused again and told the remainder) and said in full in
 * `x-tollgate-retry-after`; `x-tollgate-limit` names the refusing limit.
 * docs/limits-and-budgets.md ("Responses") is the user-facing account.
 */
import type { AcquireResult, BucketSnapshot } from '../limiter.js';

/** Header names, lower-case as Node and Hono emit them. */
const RATE_LIMIT_HEADERS = {
  policy: 'ratelimit-policy',
  limit: 'ratelimit',
  retryAfter: 'retry-after',
  retryAfterMs: 'retry-after-ms',
  refusingLimit: 'x-tollgate-limit',
  fullWait: 'x-tollgate-retry-after',
} as const;

/**
 * The longest wait `retry-after-ms` asks for: the AI SDK and older
 * openai-node releases honour it only when it is below 60 000 ms. `Retry-After` (whole seconds,
 * rounded up) is then at most 60.
 */
export const MAX_RETRY_AFTER_MS = 59_999;

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
      headers[RATE_LIMIT_HEADERS.fullWait] = String(fullWaitSeconds(result.retryAfterMs));
    }
  }
  return headers;
}

/**
 * The retry delay a client is told, as whole ms and as whole seconds
 * (rounded up). A wait under {@link MAX_RETRY_AFTER_MS} is stretched by the
 * seed's jitter fraction of the wait or of the room left under the ceiling,
 * whichever is smaller: never earlier than the bucket allows, never past the
 * ceiling, and keys still spread apart near it. A longer wait is told the
 * ceiling.
 */
export function computeJitteredRetry(retryAfterMs: number, seed: string): { seconds: number; ms: number } {
  const base = Math.max(0, Math.ceil(retryAfterMs));
  const ms = base >= MAX_RETRY_AFTER_MS ? MAX_RETRY_AFTER_MS : base + Math.ceil(computeJitterFraction(seed) * Math.min(base, MAX_RETRY_AFTER_MS - base));
  return { ms, seconds: Math.ceil(ms / 1000) };
}

/** The whole seconds until the bucket admits the request: no jitter, no ceiling (`x-tollgate-retry-after`). */
export function fullWaitSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/**
 * A wait in seconds as a person reads it, rounded up at its smallest unit:
 * "45 s", "2 min 15 s", "3 h 5 min", "2 d 4 h".
 */
export function describeWait(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return joinUnits(Math.floor(s / 60), 'min', s % 60, 's');
  if (s < 86_400) {
    const minutes = Math.ceil(s / 60);
    return minutes === 1440 ? '24 h' : joinUnits(Math.floor(minutes / 60), 'h', minutes % 60, 'min');
  }
  const hours = Math.ceil(s / 3600);
  return joinUnits(Math.floor(hours / 24), 'd', hours % 24, 'h');
}

function joinUnits(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor === 0 ? `${major} ${majorUnit}` : `${major} ${majorUnit} ${minor} ${minorUnit}`;
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

/** Limit names as sf-strings: a policy's few names, formatted on every answer (bounded: a policy is the operator's). */
const formattedNames = new Map<string, string>();
const MAX_FORMATTED_NAMES = 1000;

/** An sf-string: printable ASCII only, with `\` and `"` escaped (RFC 9651 §3.3.3). */
function formatString(text: string): string {
  let formatted = formattedNames.get(text);
  if (formatted === undefined) {
    const printable = text.replace(/[^\x20-\x7e]/g, '?');
    formatted = `"${printable.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
    if (formattedNames.size >= MAX_FORMATTED_NAMES) formattedNames.clear();
    formattedNames.set(text, formatted);
  }
  return formatted;
}
