/**
 * The client's leaving (src/http/client-left.ts): fires its listeners once, forgets removed ones,
 * and hands an API that needs an AbortSignal one that aborts with it, whether the client left
 * before or after the signal was asked for.
 */
import { describe, expect, it } from 'vitest';
import { abortControllerOf, ClientLeft } from '../../../src/http/client-left.js';

describe('ClientLeft', () => {
  it('calls each listener once when the client leaves, and none it was told to forget', () => {
    const left = new ClientLeft();
    const calls: string[] = [];
    const forgotten = (): void => void calls.push('forgotten');
    left.addEventListener('abort', () => calls.push('once'), { once: true });
    left.addEventListener('abort', () => calls.push('kept'));
    left.addEventListener('abort', forgotten, { once: true });
    left.removeEventListener('abort', forgotten);
    expect(left.aborted).toBe(false);
    left.leave();
    left.leave();
    expect(left.aborted).toBe(true);
    expect(calls).toEqual(['once', 'kept']);
  });

  it('makes an AbortSignal that aborts with it, asked for before or after the client left', () => {
    const before = new ClientLeft();
    const early = abortControllerOf(before).signal;
    expect(early.aborted).toBe(false);
    before.leave();
    expect(early.aborted).toBe(true);
    const after = new ClientLeft();
    after.leave();
    expect(abortControllerOf(after).signal.aborted).toBe(true);
  });
});
