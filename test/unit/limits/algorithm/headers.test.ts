import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  buildRateLimitHeaders,
  computeJitterFraction,
  computeJitteredRetry,
  describeWait,
  MAX_RETRY_AFTER_MS,
  pickTightest,
} from '../../../../src/limits/algorithm/headers.js';
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
    const ms = 2500 + Math.ceil(2500 * jitter);
    expect(headers['x-tollgate-limit']).toBe('rpm');
    expect(headers['retry-after-ms']).toBe(String(ms));
    expect(headers['retry-after']).toBe(String(Math.ceil(ms / 1000)));
    expect(headers['x-tollgate-retry-after']).toBe('3');
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

  it('never asks an SDK to wait a minute or more, jitter included, and never less than a shorter wait the bucket needs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 86_400_000 }), fc.string(), (waitMs, seed) => {
        const { seconds, ms } = computeJitteredRetry(waitMs, seed);
        // The AI SDK and older openai-node releases honour retry-after-ms only below 60 000.
        expect(ms).toBeLessThan(60_000);
        expect(seconds).toBeLessThanOrEqual(60);
        expect(seconds * 1000).toBeGreaterThanOrEqual(ms);
        if (waitMs <= MAX_RETRY_AFTER_MS) expect(ms).toBeGreaterThanOrEqual(waitMs);
        if (waitMs <= 60_000) expect(seconds * 1000).toBeGreaterThanOrEqual(waitMs);
        if (waitMs >= MAX_RETRY_AFTER_MS) expect(ms).toBe(MAX_RETRY_AFTER_MS);
        // The jitter adds at most half the wait.
        if (waitMs < MAX_RETRY_AFTER_MS) expect(ms).toBeLessThanOrEqual(Math.ceil(waitMs * 1.5));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps keys spread apart near the ceiling instead of piling them on it', () => {
    const told = new Set<number>();
    for (let i = 0; i < 200; i++) told.add(Math.floor(computeJitteredRetry(50_000, `key-${i}`).ms / 1000));
    expect(Math.min(...told)).toBe(50);
    expect(Math.max(...told)).toBeLessThan(60);
    expect(told.size).toBeGreaterThanOrEqual(5);
  });

  it('tells a wait longer than the ceiling in full, in x-tollgate-retry-after', () => {
    const result: AcquireResult = { ok: false, retryAfterMs: 134_200, refusedBy: rpm, reason: 'rate_limited', states: [state(rpm, 0, 134_200)] };
    const headers = buildRateLimitHeaders(result, 'key-7');
    expect(headers['retry-after']).toBe('60');
    expect(headers['retry-after-ms']).toBe(String(MAX_RETRY_AFTER_MS));
    expect(headers['x-tollgate-retry-after']).toBe('135');
    expect(headers.ratelimit).toBe('"rpm";r=0;t=135');
  });

  it('says a wait as a person reads it, never shorter than it is', () => {
    expect(describeWait(1)).toBe('1 s');
    expect(describeWait(59)).toBe('59 s');
    expect(describeWait(60)).toBe('1 min');
    expect(describeWait(135)).toBe('2 min 15 s');
    expect(describeWait(3599)).toBe('59 min 59 s');
    expect(describeWait(3600)).toBe('1 h');
    expect(describeWait(3601)).toBe('1 h 1 min');
    expect(describeWait(86_399)).toBe('24 h');
    expect(describeWait(86_400)).toBe('1 d');
    expect(describeWait(3 * 86_400 + 1)).toBe('3 d 1 h');
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

  it('formats any limit name the same however often and in whatever order it is asked for (property)', () => {
    const expected = (name: string): string =>
      `"${name
        .split('')
        .map((c) => (c === '"' || c === '\\' ? `\\${c}` : c >= ' ' && c <= '~' ? c : '?'))
        .join('')}"`;
    const policyOf = (name: string): string | undefined =>
      buildRateLimitHeaders({ ok: true, ticket, states: [state({ ...rpm, limitName: name }, 1, 1000)] }, 'k')['ratelimit-policy'];
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom('rpm', 'a"b', 'x\\y'), fc.string({ unit: 'grapheme-ascii' }), fc.string({ unit: 'binary' })), { maxLength: 40 }),
        (names) => {
          for (const name of [...names, ...names]) expect(policyOf(name)).toBe(`${expected(name)};q=60;w=60`);
        },
      ),
    );
    // Past the cache's bound (it starts over) the answers stay the same.
    for (let i = 0; i < 2500; i += 1) expect(policyOf(`limit-${i % 1200}`)).toBe(`"limit-${i % 1200}";q=60;w=60`);
  });

  it('picks the limit nearest to refusing', () => {
    expect(pickTightest([state(rpm, 30, 1000), state(tpm, 10_000, 5000)])?.bucket).toBe(tpm);
    expect(pickTightest([])).toBeUndefined();
  });
});
