/**
 * A limiter's no as the client reads it: the wait it is told to retry after (under the minute the
 * SDKs honour) and the full wait in words, consistent in every form, for each kind of refusal.
 */
import { describe, expect, it } from 'vitest';
import { limitRefusal } from '../../../src/pipeline/refusals.js';
import { createBucketRef, type AcquireResult, type LimitBinding } from '../../../src/limits/index.js';
import { parseLimit, type Policy } from '../../../src/domain/policy.js';
import type { Caller } from '../../../src/domain/caller.js';

const policy: Policy = { limits: [] };
const caller: Caller = {
  key: { id: 'key-1', name: 'k', keyHash: 'h', tenantId: null, revokedAt: null, expiresAt: null, policy, version: 1 },
  policy,
  tenant: undefined,
  tenantPolicy: undefined,
};
const limit = parseLimit('tokens:100000/day');
const binding: LimitBinding = { limit, bucket: createBucketRef('key', caller.key.id, limit) };

function refuse(reason: 'rate_limited' | 'unavailable' | 'never_fits', retryAfterMs: number) {
  const result: Extract<AcquireResult, { ok: false }> = {
    ok: false,
    retryAfterMs,
    refusedBy: binding.bucket,
    reason,
    states: [{ bucket: binding.bucket, remaining: 0, burst: 100_000, ratePerSec: 100_000 / 86_400, resetMs: retryAfterMs }],
  };
  return limitRefusal(result, caller, [binding], [{ bucket: binding.bucket, cost: 5000 }]);
}

describe('limit refusals', () => {
  it('tells an SDK under a minute and a person the hours', () => {
    const refusal = refuse('rate_limited', 3 * 3_600_000 + 4 * 60_000 + 10_000);
    expect(refusal.status).toBe(429);
    expect(refusal.headers['retry-after']).toBe('60');
    expect(refusal.headers['retry-after-ms']).toBe('59999');
    expect(refusal.headers['x-tollgate-retry-after']).toBe(String(3 * 3600 + 4 * 60 + 10));
    expect(refusal.message).toBe('Rate limit reached for limit "tokens-per-day". Try again in 3 h 5 min.');
  });

  it('says a short wait in seconds, never shorter than Retry-After allows', () => {
    const refusal = refuse('rate_limited', 1500);
    expect(refusal.message).toBe('Rate limit reached for limit "tokens-per-day". Try again in 2 s.');
    expect(Number(refusal.headers['retry-after-ms'])).toBeGreaterThanOrEqual(1500);
    expect(Number(refusal.headers['retry-after']) * 1000).toBeGreaterThanOrEqual(Number(refusal.headers['retry-after-ms']));
  });

  it('asks for one second in both forms when the limiter cannot be asked', () => {
    const refusal = refuse('unavailable', 30_000);
    expect(refusal.status).toBe(503);
    expect(refusal.headers['retry-after']).toBe('1');
    expect(refusal.headers['retry-after-ms']).toBe('1000');
    expect(refusal.headers['x-tollgate-retry-after']).toBeUndefined();
  });

  it('gives no wait for a request no wait could admit', () => {
    const refusal = refuse('never_fits', 0);
    expect(refusal.status).toBe(400);
    for (const name of ['retry-after', 'retry-after-ms', 'x-tollgate-retry-after']) expect(refusal.headers[name], name).toBeUndefined();
  });
});
