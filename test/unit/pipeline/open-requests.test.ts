/**
 * The registry of requests sent upstream and not settled yet (src/pipeline/open-requests.ts):
 * what a shutdown waits for and then stops.
 */
import { describe, expect, it } from 'vitest';
import type { AdmittedRequest } from '../../../src/pipeline/context.js';
import { OpenRequests } from '../../../src/pipeline/open-requests.js';

const request = (): AdmittedRequest => ({ settled: false }) as AdmittedRequest;

describe('open requests', () => {
  it('stops every open request once, with the stop noted last, and none that was done', () => {
    const open = new OpenRequests();
    const [a, b, c] = [request(), request(), request()];
    const stopped: string[] = [];
    open.track(a, () => stopped.push('a, forward'));
    open.track(a, () => stopped.push('a, relay'));
    open.track(b, () => stopped.push('b'));
    open.track(c, () => stopped.push('c'));
    open.done(b);
    expect(open.size).toBe(2);
    expect(open.stopAll()).toBe(2);
    expect(stopped.sort()).toEqual(['a, relay', 'c']);
  });

  it('does not note a request already settled, and counts a request done twice once', () => {
    const open = new OpenRequests();
    const settled = { settled: true } as AdmittedRequest;
    open.track(settled, () => undefined);
    expect(open.size).toBe(0);
    const a = request();
    open.track(a, () => undefined);
    open.done(a);
    open.done(a);
    open.done(settled);
    expect(open.size).toBe(0);
    expect(open.stopAll()).toBe(0);
  });

  it('is idle once the last open request is done, whatever order they end in', async () => {
    const open = new OpenRequests();
    const requests = Array.from({ length: 5 }, request);
    for (const r of requests) open.track(r, () => undefined);
    let idle = false;
    const waiting = open.idle().then(() => (idle = true));
    for (const r of [requests[2]!, requests[0]!, requests[4]!, requests[1]!]) open.done(r);
    await Promise.resolve();
    expect(idle).toBe(false);
    open.done(requests[3]!);
    await waiting;
    expect(idle).toBe(true);
    expect(open.size).toBe(0);
  });

  it('reports errors of a stop and goes on stopping the others', () => {
    const open = new OpenRequests();
    const errors: unknown[] = [];
    let stopped = 0;
    open.track(request(), () => {
      throw new Error('broken');
    });
    open.track(request(), () => (stopped += 1));
    expect(open.stopAll((error) => errors.push(error))).toBe(2);
    expect(stopped).toBe(1);
    expect(errors).toHaveLength(1);
  });
});
