/** The per-upstream circuit breaker and Retry-After: pure, with a clock moved by hand. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { retryAfterMs, UpstreamBreaker } from '../../../src/upstreams/breaker.js';

const settings = { failures: 3, cooldownMs: 1000 };

describe('UpstreamBreaker', () => {
  it('opens after consecutive failures, lets one probe through after the cooldown, and closes on its success', () => {
    const breaker = new UpstreamBreaker(settings);
    breaker.recordFailure(0);
    breaker.recordFailure(1);
    expect(breaker.tryAcquire(2)).toBe(true);
    breaker.recordFailure(2);
    expect(breaker.tryAcquire(3)).toBe(false);
    expect(breaker.tryAcquire(1001)).toBe(false);
    expect(breaker.tryAcquire(1002)).toBe(true); // the probe
    expect(breaker.tryAcquire(1003)).toBe(false); // one at a time
    breaker.recordSuccess();
    expect(breaker.tryAcquire(1004)).toBe(true);
    expect(breaker.tryAcquire(1004)).toBe(true);
  });

  it('reopens for a whole cooldown when the probe fails', () => {
    const breaker = new UpstreamBreaker(settings);
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(0);
    expect(breaker.tryAcquire(1000)).toBe(true);
    breaker.recordFailure(1500);
    expect(breaker.tryAcquire(2499)).toBe(false);
    expect(breaker.tryAcquire(2500)).toBe(true);
  });

  it('a success resets the count: failures must be consecutive', () => {
    const breaker = new UpstreamBreaker(settings);
    breaker.recordFailure(0);
    breaker.recordFailure(0);
    breaker.recordSuccess();
    breaker.recordFailure(0);
    breaker.recordFailure(0);
    expect(breaker.tryAcquire(1)).toBe(true);
  });

  it('skips an upstream until its Retry-After has passed, after a single failure', () => {
    const breaker = new UpstreamBreaker(settings);
    breaker.recordFailure(100, 30_000);
    expect(breaker.tryAcquire(30_099)).toBe(false);
    expect(breaker.tryAcquire(30_100)).toBe(true);
  });

  it('a client that left frees the probe slot without judging the upstream', () => {
    const breaker = new UpstreamBreaker(settings);
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(0);
    expect(breaker.tryAcquire(1000)).toBe(true);
    breaker.release();
    expect(breaker.tryAcquire(1000)).toBe(true);
  });

  // A model of the rules, run against any sequence of events at non-decreasing times.
  it('never lets an attempt through while open and cooling down, nor two probes at once; always admits when closed', () => {
    type Event = { kind: 'acquire' | 'ok' | 'fail' | 'release'; dt: number; retryAfter: number | undefined };
    const event = fc.record({
      kind: fc.constantFrom<Event['kind']>('acquire', 'acquire', 'ok', 'fail', 'fail', 'release'),
      dt: fc.nat(700),
      retryAfter: fc.option(fc.nat(3000), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 80 }), (events) => {
        const breaker = new UpstreamBreaker(settings);
        let now = 0;
        let consecutive = 0;
        let open = false;
        let probing = false;
        let quietUntil = 0;
        for (const e of events) {
          now += e.dt;
          if (e.kind === 'acquire') {
            const expected = now >= quietUntil && (!open || !probing);
            expect(breaker.tryAcquire(now)).toBe(expected);
            if (expected && open) probing = true;
          } else if (e.kind === 'ok') {
            breaker.recordSuccess();
            consecutive = 0;
            open = false;
            probing = false;
            quietUntil = 0;
          } else if (e.kind === 'fail') {
            breaker.recordFailure(now, e.retryAfter);
            consecutive += 1;
            const wasProbe = open && probing;
            probing = false;
            if (wasProbe || consecutive >= settings.failures) {
              open = true;
              quietUntil = Math.max(quietUntil, now + settings.cooldownMs);
            }
            if (e.retryAfter !== undefined && e.retryAfter > 0) quietUntil = Math.max(quietUntil, now + e.retryAfter);
          } else {
            breaker.release();
            probing = false;
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads seconds, an HTTP date and retry-after-ms, bounded', () => {
    expect(retryAfterMs({ 'retry-after': '7' }, now, 60_000)).toBe(7000);
    expect(retryAfterMs({ 'retry-after': '0.5' }, now, 60_000)).toBe(500);
    expect(retryAfterMs({ 'retry-after-ms': '1250' }, now, 60_000)).toBe(1250);
    expect(retryAfterMs({ 'retry-after': '3600' }, now, 60_000)).toBe(60_000);
    expect(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:10 GMT' }, now, 60_000)).toBe(10_000);
    expect(retryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 00:00:10 GMT' }, now, 60_000)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    expect(retryAfterMs({}, now, 60_000)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': 'soon' }, now, 60_000)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '-5' }, now, 60_000)).toBeUndefined();
  });
});
