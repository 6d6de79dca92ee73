import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../../src/limits/algorithm/circuit-breaker.js';

describe('circuit breaker', () => {
  it('opens after consecutive failures, probes once after the cooldown, closes on success', () => {
    const breaker = new CircuitBreaker(2, 1000);
    expect(breaker.recordFailure(0)).toBe(false);
    expect(breaker.recordFailure(10)).toBe(true);
    expect(breaker.isOpen(500)).toBe(true);
    expect(breaker.allowCall(500)).toBe(false);
    expect(breaker.remainingMs(500)).toBe(510);
    expect(breaker.allowCall(1010)).toBe(true);
    expect(breaker.allowCall(1011)).toBe(false);
    expect(breaker.recordSuccess()).toBe(true);
    expect(breaker.allowCall(1012)).toBe(true);
  });

  it('reopens when the probe fails', () => {
    const breaker = new CircuitBreaker(1, 100);
    breaker.recordFailure(0);
    expect(breaker.allowCall(100)).toBe(true);
    expect(breaker.recordFailure(100)).toBe(true);
    expect(breaker.isOpen(150)).toBe(true);
  });

  it('forgets failures after a success', () => {
    const breaker = new CircuitBreaker(2, 100);
    breaker.recordFailure(0);
    breaker.recordSuccess();
    expect(breaker.recordFailure(1)).toBe(false);
  });
});
