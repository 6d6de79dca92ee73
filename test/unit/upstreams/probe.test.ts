/** The upstream check (src/upstreams/probe.ts): what each answer means, and that /readyz never probes per read. */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createUpstreamProbe, type ProbeTarget } from '../../../src/upstreams/probe.js';
import { captureLogs } from '../../support/logs.js';

function answering(name: string, url: string, statuses: number[] | (() => number)): ProbeTarget & { calls: number } {
  const target = {
    name,
    url,
    keySource: 'TOLLGATE_UPSTREAM_KEY',
    calls: 0,
    send() {
      target.calls += 1;
      const status = typeof statuses === 'function' ? statuses() : statuses[Math.min(target.calls, statuses.length) - 1]!;
      const body = Readable.from([Buffer.from('{"error":{}}')]);
      return Promise.resolve({ status, headers: {}, body, whole: () => Promise.resolve(Buffer.from('{"error":{}}')) });
    },
  };
  return target;
}

describe('the upstream check', () => {
  it('calls a rejected key and an unversioned 404 misconfigured; a 403, a versioned 404 and a 5xx are not', async () => {
    const logs = captureLogs('info');
    const probe = createUpstreamProbe(
      [
        answering('rejected', 'https://api.example.com/v1', [401]),
        answering('forbidden', 'https://api.example.com/v1', [403]),
        answering('no-v1', 'https://user:secret@api.example.com', [404]),
        answering('no-models', 'https://api.example.com/v1', [404]),
        answering('down', 'https://api.example.com/v1', [503]),
      ],
      { logger: logs.logger, now: () => 1000 },
    );
    expect(probe.latest().map((r) => r.state)).toEqual(['unknown', 'unknown', 'unknown', 'unknown', 'unknown']);
    const results = await probe.probe();
    expect(results.map((r) => [r.name, r.state, r.misconfigured])).toEqual([
      ['rejected', 'key_rejected', true],
      ['forbidden', 'key_refused', false],
      ['no-v1', 'path_not_found', true],
      ['no-models', 'path_not_found', false],
      ['down', 'unavailable', false],
    ]);
    expect(logs.lines.map((l) => l.level)).toEqual(['error', 'error', 'error', 'error', 'warn']);
    expect(logs.raw.join('\n')).not.toContain('secret');
  });

  it('an upstream that does not answer is unavailable, not misconfigured', async () => {
    const logs = captureLogs('info');
    const target: ProbeTarget = {
      name: 'gone',
      url: 'http://127.0.0.1:1/v1',
      keySource: 'K',
      send: () => Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })),
    };
    const [result] = await createUpstreamProbe([target], { logger: logs.logger, now: () => 0 }).probe();
    expect(result).toMatchObject({ state: 'unavailable', status: null, misconfigured: false, message: 'no answer from the upstream (ECONNREFUSED)' });
  });

  it('probes again only when the last probe is older than the interval, and logs only a change', async () => {
    const logs = captureLogs('info');
    let clock = 0;
    let status = 200;
    const target = answering('default', 'https://api.example.com/v1', () => status);
    const probe = createUpstreamProbe([target], { logger: logs.logger, now: () => clock, intervalMs: 30_000 });
    await probe.probe();
    for (let i = 0; i < 100; i += 1) probe.latest();
    expect(target.calls).toBe(1);
    clock = 30_000;
    probe.latest();
    await probe.probe(); // the one already running
    expect(target.calls).toBe(2);
    expect(logs.lines).toHaveLength(1);
    status = 401;
    clock = 60_000;
    probe.latest();
    const [result] = await probe.probe();
    expect(result!.state).toBe('key_rejected');
    expect(target.calls).toBe(3);
    expect(logs.lines.map((l) => l.level)).toEqual(['info', 'error']);
  });
});
