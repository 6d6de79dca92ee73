/**
 * The per-address brake on guessing secrets, with an injected clock: wrong
 * guesses are slow for good, the right token is never refused for long, and
 * memory stays bounded whatever addresses arrive.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SecretThrottle, throttleKeyOf } from '../../../src/http/secret-throttle.js';

const T0 = Date.parse('2026-11-18T15:00:00Z');

/** One attempt: after `gapMs`, a right or wrong secret from one of a few addresses. */
const attempt = fc.record({
  gapMs: fc.integer({ min: 0, max: 3000 }),
  right: fc.boolean(),
  from: fc.constantFrom('203.0.113.9', '198.51.100.7', '2001:db8::1'),
});
const shape = fc.record({ burst: fc.integer({ min: 1, max: 20 }), perSecond: fc.constantFrom(0.2, 0.5, 1, 2, 5) });

/** Plays attempts as a surface does (take; a right secret is compared and refunded), returning when each wrong one was compared. */
function play(throttle: SecretThrottle, attempts: ReadonlyArray<{ gapMs: number; right: boolean; from: string }>): Map<string, number[]> {
  const compared = new Map<string, number[]>();
  let now = T0;
  for (const { gapMs, right, from } of attempts) {
    now += gapMs;
    if (throttle.take(from, now) > 0) continue;
    if (right) throttle.refund(from, now);
    else compared.set(from, [...(compared.get(from) ?? []), now]);
  }
  return compared;
}

describe('the secret throttle', () => {
  it('lets an address make `burst` checks at once, then one per refill, and says how long to wait', () => {
    const throttle = new SecretThrottle({ burst: 10, perSecond: 1 });
    for (let i = 0; i < 10; i += 1) expect(throttle.take('203.0.113.9', T0)).toBe(0);
    expect(throttle.take('203.0.113.9', T0)).toBe(1000);
    expect(throttle.take('203.0.113.9', T0 + 400)).toBe(600);
    expect(throttle.take('203.0.113.9', T0 + 1000)).toBe(0);
    expect(throttle.take('203.0.113.9', T0 + 1000)).toBe(1000);
    // Another address is not slowed.
    expect(throttle.take('198.51.100.7', T0 + 1000)).toBe(0);
  });

  it('never takes a check from a refused attempt, so hammering while throttled does not push the wait out', () => {
    const throttle = new SecretThrottle({ burst: 2, perSecond: 1 });
    throttle.take('a', T0);
    throttle.take('a', T0);
    for (let t = 0; t < 1000; t += 10) expect(throttle.take('a', T0 + t)).toBe(1000 - t);
    expect(throttle.take('a', T0 + 1000)).toBe(0);
  });

  it('gives a right secret its check back: the right token never uses up its own checks', () => {
    const throttle = new SecretThrottle({ burst: 3, perSecond: 1 });
    for (let i = 0; i < 1000; i += 1) {
      expect(throttle.take('203.0.113.9', T0)).toBe(0);
      throttle.refund('203.0.113.9', T0);
    }
  });

  it('compares at most burst + rate·Δ wrong secrets per address over any window Δ', () => {
    fc.assert(
      fc.property(shape, fc.array(attempt, { maxLength: 300 }), ({ burst, perSecond }, attempts) => {
        const compared = play(new SecretThrottle({ burst, perSecond }), attempts);
        for (const times of compared.values()) {
          for (let i = 0; i < times.length; i += 1) {
            for (let j = i; j < times.length; j += 1) {
              const windowSec = (times[j]! - times[i]!) / 1000;
              expect(j - i + 1).toBeLessThanOrEqual(burst + perSecond * windowSec + 1e-9);
            }
          }
        }
      }),
    );
  });

  it('compares the right secret again within one refill after wrong attempts stop, and says so honestly', () => {
    fc.assert(
      fc.property(
        shape,
        fc.array(attempt, { maxLength: 300 }),
        fc.constantFrom('203.0.113.9', '198.51.100.7', '2001:db8::1'),
        ({ burst, perSecond }, attempts, from) => {
          const after = (): SecretThrottle => {
            const throttle = new SecretThrottle({ burst, perSecond });
            play(throttle, attempts);
            return throttle;
          };
          const stopped = T0 + attempts.reduce((sum, { gapMs }) => sum + gapMs, 0);
          const refillMs = Math.ceil(1000 / perSecond);
          // One refill after the last wrong attempt, the right token is compared.
          expect(after().take(from, stopped + refillMs)).toBe(0);
          // A refused attempt is told a wait of at most one refill, and the wait it is told is enough.
          const throttle = after();
          const wait = throttle.take(from, stopped);
          expect(wait).toBeLessThanOrEqual(refillMs);
          if (wait > 0) expect(throttle.take(from, stopped + wait)).toBe(0);
        },
      ),
    );
  });

  it('remembers at most maxAddresses addresses, and a flood of them does not free a throttled one early', () => {
    const throttle = new SecretThrottle({ burst: 2, perSecond: 1, maxAddresses: 100 });
    throttle.take('203.0.113.9', T0);
    throttle.take('203.0.113.9', T0);
    let now = T0;
    for (let i = 0; i < 5000; i += 1) {
      now += 0.1;
      // The throttled address keeps trying (and is refused): it stays recently used.
      if (i % 50 === 0) expect(throttle.take('203.0.113.9', now)).toBeGreaterThan(0);
      throttle.take(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, now);
      expect(throttle.size).toBeLessThanOrEqual(100);
    }
  });

  it('counts an IPv6 client per /64, and IPv4 per address', () => {
    expect(throttleKeyOf('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(throttleKeyOf('2001:db8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(throttleKeyOf('2001:0db8:0001:0002:ffff::1')).toBe('2001:db8:1:2::/64');
    expect(throttleKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(throttleKeyOf('::1')).toBe('0:0:0:0::/64');
    expect(throttleKeyOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(throttleKeyOf('203.0.113.9')).toBe('203.0.113.9');
    expect(throttleKeyOf('unknown')).toBe('unknown');
    const throttle = new SecretThrottle({ burst: 1, perSecond: 1 });
    expect(throttle.take('2001:db8:1:2::1', T0)).toBe(0);
    expect(throttle.take('2001:db8:1:2:aaaa:bbbb:cccc:dddd', T0)).toBeGreaterThan(0);
    expect(throttle.take('2001:db8:1:3::1', T0)).toBe(0);
  });
});
