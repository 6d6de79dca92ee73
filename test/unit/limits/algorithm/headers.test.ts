import { describe, expect, it } from 'vitest';
import { buildRateLimitHeaders, computeJitterFraction, computeJitteredRetry, pickTightest } from '../../../../src/limits/algorithm/headers.js';
import type { AcquireResult, BucketRef, BucketSnapshot, Ticket } from '../../../../src/limits/limiter.js';

const rpm: BucketRef = { id: 'key:k:rpm', hashTag: 'key:k', limitName: 'rpm', ratePerSec: 1, burst: 60 };
const tpm: BucketRef = { id: 'key:k:tpm', hashTag: 'key:k', limitName: 'tpm', ratePerSec: 1000, burst: 60_000, unit: 'tokens' };
const ticket: Ticket = { costs: [1, 100], settled: false };

function state(bucket: BucketRef, remaining: number, resetMs: number): BucketSnapshot {
  return { bucket, remaining, burst: bucket.burst, ratePerSec: bucket.ratePerSec, resetMs };
}

describe('rate-limit headers', () => {
  it('describes the tightest limit on an allowed response (draft-ietf-httpapi-ratelimit-headers-10)', () => {
    const result: AcquireResult = { ok: true, ticket, states: [state(rpm, 50, 10_000), state(tpm, 1000, 59_000)] };
    const headers = buildRateLimitHeaders(result, 'k');
    expect(headers).toEqual({
      'ratelimit-policy': '"tpm";q=60000;w=60;tollgate-unit="tokens"',
      ratelimit: '"tpm";r=1000;t=59',
    });
  });

  it('names the refusing limit and says when to retry, with per-key jitter', () => {
    const result: AcquireResult = {
      ok: false,
      retryAfterMs: 2500,
      refusedBy: rpm,
      reason: 'rate_limited',
      states: [state(rpm, 0, 60_000), state(tpm, 40_000, 20_000)],
    };
    const headers = buildRateLimitHeaders(result, 'key-1');
    const jitter = computeJitterFraction('key-1');
    const ms = Math.ceil(2500 * (1 + jitter));
    expect(headers['x-tollgate-limit']).toBe('rpm');
    expect(headers['retry-after-ms']).toBe(String(ms));
    expect(headers['retry-after']).toBe(String(Math.ceil(ms / 1000)));
    expect(headers['ratelimit-policy']).toBe('"rpm";q=60;w=60');
    expect(headers.ratelimit).toBe('"rpm";r=0;t=3');
  });

  it('jitters each key the same way every time, within +50%, never earlier than the bucket allows', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const key = `key-${i}`;
      const fraction = computeJitterFraction(key);
      expect(fraction).toBeGreaterThanOrEqual(0);
      expect(fraction).toBeLessThan(0.5);
      expect(computeJitterFraction(key)).toBe(fraction);
      const retry = computeJitteredRetry(10_000, key);
      expect(retry.ms).toBeGreaterThanOrEqual(10_000);
      expect(retry.ms).toBeLessThanOrEqual(15_000);
      expect(retry.seconds).toBeGreaterThanOrEqual(10);
      seen.add(Math.floor(fraction * 10));
    }
    // Different keys spread over the range (thundering herd avoided).
    expect(seen.size).toBeGreaterThanOrEqual(4);
  });

  it('gives no Retry-After for a request that can never fit', () => {
    const result: AcquireResult = { ok: false, retryAfterMs: 0, refusedBy: tpm, reason: 'never_fits', states: [state(tpm, 60_000, 0)] };
    const headers = buildRateLimitHeaders(result, 'k');
    expect(headers['retry-after']).toBeUndefined();
    expect(headers['x-tollgate-limit']).toBe('tpm');
  });

  it('escapes a limit name as a structured-field string', () => {
    const odd: BucketRef = { ...rpm, limitName: 'a"b\\c' };
    const headers = buildRateLimitHeaders({ ok: true, ticket, states: [state(odd, 1, 1000)] }, 'k');
    expect(headers['ratelimit-policy']).toBe('"a\\"b\\\\c";q=60;w=60');
  });

  it('picks the limit nearest to refusing', () => {
    expect(pickTightest([state(rpm, 30, 1000), state(tpm, 10_000, 5000)])?.bucket).toBe(tpm);
    expect(pickTightest([])).toBeUndefined();
  });
});
