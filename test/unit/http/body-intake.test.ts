/**
 * Bodies being taken in (src/http/body-intake.ts): a key's large bodies are
 * bounded, the process's memory for bodies is bounded, and one key cannot
 * take it all; past a bound a body waits, then is refused.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type TollgateError } from '../../../src/domain/errors.js';
import { BodyIntake } from '../../../src/http/body-intake.js';

const MB = 1024 * 1024;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function intake(options: Partial<ConstructorParameters<typeof BodyIntake>[0]> = {}): BodyIntake {
  return new BodyIntake({ largeBytes: MB, largePerKey: 2, memoryBytes: 100 * MB, maxWaitMs: 5000, ...options });
}

/** Where a grow stands: granted at once, waiting, granted after waiting, or refused (with the error). */
function track(result: Promise<void> | undefined): { state: () => string; error: () => TollgateError | undefined } {
  if (result === undefined) return { state: () => 'granted', error: () => undefined };
  let state = 'waiting';
  let error: TollgateError | undefined;
  result.then(
    () => (state = 'granted'),
    (reason: TollgateError) => {
      state = 'refused';
      error = reason;
    },
  );
  return { state: () => state, error: () => error };
}

describe('large bodies per key', () => {
  it('lets a key read two large bodies at once; the third waits for one of them, in arrival order', async () => {
    const gate = intake();
    const first = gate.open('key_a');
    const second = gate.open('key_a');
    expect(first.grow(20 * MB)).toBeUndefined();
    expect(second.grow(20 * MB)).toBeUndefined();
    const third = track(gate.open('key_a').grow(20 * MB));
    const fourth = track(gate.open('key_a').grow(20 * MB));
    await vi.advanceTimersByTimeAsync(100);
    expect([third.state(), fourth.state()]).toEqual(['waiting', 'waiting']);

    first.release();
    await vi.advanceTimersByTimeAsync(0);
    expect([third.state(), fourth.state()]).toEqual(['granted', 'waiting']);
    expect(gate.largeBodiesOf('key_a')).toBe(2);
  });

  it('refuses the one that waited too long with a 429, and keeps serving other keys meanwhile', async () => {
    const gate = intake();
    gate.open('key_a').grow(20 * MB);
    gate.open('key_a').grow(20 * MB);
    const late = track(gate.open('key_a').grow(20 * MB));
    expect(gate.open('key_b').grow(20 * MB)).toBeUndefined();
    expect(gate.open('key_a').grow(100 * 1024)).toBeUndefined(); // small bodies are not counted
    await vi.advanceTimersByTimeAsync(5000);
    expect(late.state()).toBe('refused');
    expect(late.error()?.code).toBe('rate_limit_exceeded');
    expect(late.error()?.status).toBe(429);
    expect(late.error()?.headers).toMatchObject({ 'retry-after': '1', connection: 'close' });
  });

  it('takes the slot by the declared length before a byte is read, and counts memory only as bytes arrive', async () => {
    const gate = intake();
    const slow = gate.open('key_a');
    expect(slow.grow(0, 30 * MB)).toBeUndefined();
    expect(gate.largeBodiesOf('key_a')).toBe(1);
    // A slow upload holds what it sent, not what it announced.
    expect(gate.bytesInUse).toBe(0);
    expect(slow.grow(64 * 1024)).toBeUndefined();
    expect(gate.bytesInUse).toBeLessThan(MB);
    gate.open('key_a').grow(0, 30 * MB);
    const third = track(gate.open('key_a').grow(0, 30 * MB));
    await vi.advanceTimersByTimeAsync(10);
    expect(third.state()).toBe('waiting');
  });

  it('counts a body whose length was not declared once it grows past the size', async () => {
    const gate = intake();
    gate.open('key_a').grow(5 * MB);
    gate.open('key_a').grow(5 * MB);
    const chunked = gate.open('key_a');
    expect(chunked.grow(64 * 1024)).toBeUndefined();
    expect(chunked.grow(512 * 1024)).toBeUndefined();
    const past = track(chunked.grow(MB + 1));
    await vi.advanceTimersByTimeAsync(10);
    expect(past.state()).toBe('waiting');
  });

  it('gives a waiting body up when its client leaves', async () => {
    const gate = intake();
    gate.open('key_a').grow(20 * MB);
    gate.open('key_a').grow(20 * MB);
    const client = new AbortController();
    const waiting = track(gate.open('key_a', client.signal).grow(20 * MB));
    client.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(waiting.error()?.code).toBe('client_closed_request');
  });
});

describe('memory for bodies', () => {
  it('holds bodies within the budget: one more waits until memory is given back', async () => {
    const gate = intake({ largePerKey: 100 });
    const tickets = ['a', 'b', 'c'].map((key) => gate.open(`key_${key}`));
    for (const ticket of tickets) expect(ticket.grow(30 * MB)).toBeUndefined();
    const fourth = track(gate.open('key_d').grow(30 * MB));
    await vi.advanceTimersByTimeAsync(10);
    expect(fourth.state()).toBe('waiting');
    expect(gate.bytesInUse).toBe(90 * MB);
    tickets[0]!.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(fourth.state()).toBe('granted');
    expect(gate.bytesInUse).toBe(90 * MB);
  });

  it('refuses with a 503 when memory does not come back in time', async () => {
    const gate = intake({ largePerKey: 100 });
    for (const key of ['a', 'b', 'c']) gate.open(`key_${key}`).grow(30 * MB);
    const late = track(gate.open('key_d').grow(30 * MB));
    await vi.advanceTimersByTimeAsync(5000);
    expect(late.error()?.code).toBe('server_busy');
    expect(late.error()?.status).toBe(503);
  });

  it('lets one key hold at most half of it', async () => {
    const gate = intake({ largePerKey: 100 });
    expect(gate.open('key_a').grow(30 * MB)).toBeUndefined();
    const over = track(gate.open('key_a').grow(30 * MB));
    await vi.advanceTimersByTimeAsync(10);
    expect(over.state()).toBe('waiting');
    expect(gate.open('key_b').grow(30 * MB)).toBeUndefined();
  });

  it('grants a chunked body in steps, and gives all of it back on release', () => {
    const gate = intake();
    const ticket = gate.open('key_a');
    for (let total = 16 * 1024; total <= 600 * 1024; total += 16 * 1024) expect(ticket.grow(total)).toBeUndefined();
    expect(gate.bytesInUse).toBeGreaterThanOrEqual(600 * 1024);
    ticket.release();
    ticket.release();
    expect(gate.bytesInUse).toBe(0);
  });

  it('remembers a bounded number of keys, and still holds each key to half after forgetting the idle ones', () => {
    const gate = intake({ largePerKey: 100 });
    // Bodies of 5,000 keys, one at a time, while key_busy holds 40 MB throughout.
    const busy = gate.open('key_busy');
    expect(busy.grow(40 * MB)).toBeUndefined();
    for (let i = 0; i < 5000; i += 1) {
      const ticket = gate.open(`key_${i}`);
      expect(ticket.grow(1024)).toBeUndefined();
      ticket.release();
      expect(gate.keysRemembered).toBeLessThanOrEqual(1025);
    }
    expect(gate.bytesInUse).toBe(40 * MB);
    // key_busy's bytes survived the sweeps: 20 MB more would take it past half of 100 MB.
    expect(busy.grow(60 * MB)).toBeInstanceOf(Promise);
    expect(gate.open('key_other').grow(40 * MB)).toBeUndefined();
    busy.release();
  });
});
