/**
 * Counters summed per series before prom-client sees them: every read of the registry shows every
 * increment. Histograms counted in plain numbers read out exactly as prom-client's own.
 */
import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics.js';
import { SummedHistogram } from '../../src/summed-histogram.js';

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('counters summed before prom-client', () => {
  it('shows every increment at each scrape, cumulative from one scrape to the next', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    for (let i = 0; i < 3; i++) metrics.countRequest('alpha', 'gpt-4o-mini', 'chat', 'ok');
    metrics.countRequest('alpha', 'gpt-4o-mini', 'chat', 'upstream_error');
    metrics.countRequest('beta', 'gpt-4o-mini', 'chat', 'ok');
    metrics.recordUsage('alpha', 'gpt-4o-mini', 10, 5, 0.25);
    metrics.recordUsage('alpha', 'gpt-4o-mini', 7, 1, 0.5);
    metrics.countDecision('tokens', true);
    metrics.countDecision('tokens', false);
    metrics.countDecision('tokens', true);
    metrics.countAttempt('default', 'ok');
    metrics.countClientAbort('reported');
    metrics.countRejection('beta', 'rate_limited');
    metrics.countRejection('beta', 'rate_limited');

    let text = await metrics.registry.metrics();
    expect(sample(text, 'tollgate_requests_total', { key: 'alpha', model: 'gpt-4o-mini', outcome: 'ok' })).toBe(3);
    expect(sample(text, 'tollgate_requests_total', { key: 'alpha', outcome: 'upstream_error' })).toBe(1);
    expect(sample(text, 'tollgate_requests_total', { key: 'beta', outcome: 'ok' })).toBe(1);
    expect(sample(text, 'tollgate_prompt_tokens_total', { key: 'alpha' })).toBe(17);
    expect(sample(text, 'tollgate_completion_tokens_total', { key: 'alpha' })).toBe(6);
    expect(sample(text, 'tollgate_spend_usd_total', { key: 'alpha' })).toBe(0.75);
    expect(sample(text, 'tollgate_ratelimit_decisions_total', { limit: 'tokens', result: 'allowed' })).toBe(2);
    expect(sample(text, 'tollgate_ratelimit_decisions_total', { limit: 'tokens', result: 'limited' })).toBe(1);
    expect(sample(text, 'tollgate_upstream_attempts_total', { upstream: 'default', outcome: 'ok' })).toBe(1);
    expect(sample(text, 'tollgate_client_aborts_total', { usage_source: 'reported' })).toBe(1);
    expect(sample(text, 'tollgate_rejections_total', { key: 'beta', reason: 'rate_limited' })).toBe(2);

    metrics.countRequest('alpha', 'gpt-4o-mini', 'chat', 'ok');
    metrics.recordUsage('alpha', 'gpt-4o-mini', 3, 0, 0.25);
    text = await metrics.registry.metrics();
    expect(sample(text, 'tollgate_requests_total', { key: 'alpha', outcome: 'ok' })).toBe(4);
    expect(sample(text, 'tollgate_prompt_tokens_total', { key: 'alpha' })).toBe(20);
    expect(sample(text, 'tollgate_spend_usd_total', { key: 'alpha' })).toBe(1);
    // A scrape with nothing new changes nothing.
    expect(await metrics.registry.metrics()).toBe(text);
  });

  it('shows them to a primary aggregating its workers too (prom-client reads the JSON form)', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.countRequest('alpha', 'gpt-4o-mini', 'chat', 'ok');
    metrics.countRequest('alpha', 'gpt-4o-mini', 'chat', 'ok');
    const json = await metrics.registry.getMetricsAsJSON();
    const requests = json.find((metric) => metric.name === 'tollgate_requests_total');
    expect(requests?.values).toEqual([{ labels: { key: 'alpha', model: 'gpt-4o-mini', endpoint: 'chat', outcome: 'ok' }, value: 2 }]);
  });

  it('drops an amount a counter cannot take instead of failing the scrape', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.recordUsage('alpha', 'gpt-4o-mini', 10, Number.NaN, Number.POSITIVE_INFINITY);
    metrics.recordUsage('alpha', 'gpt-4o-mini', -4, 2, 0.5);
    const text = await metrics.registry.metrics();
    expect(sample(text, 'tollgate_prompt_tokens_total', { key: 'alpha' })).toBe(10);
    expect(sample(text, 'tollgate_completion_tokens_total', { key: 'alpha' })).toBe(2);
    expect(sample(text, 'tollgate_spend_usd_total', { key: 'alpha' })).toBe(0.5);
  });

  it('shows a series that was only ever given zero, as prom-client does', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.recordUsage('alpha', 'gpt-4o-mini', 12, 0, 0);
    const text = await metrics.registry.metrics();
    expect(sample(text, 'tollgate_completion_tokens_total', { key: 'alpha' })).toBe(0);
    expect(sample(text, 'tollgate_spend_usd_total', { key: 'alpha' })).toBe(0);
    expect(sample(text, 'tollgate_prompt_tokens_total', { key: 'alpha' })).toBe(12);
  });
});

describe('histograms counted in plain numbers', () => {
  const BUCKETS = [0.005, 0.01, 0.025, 0.1, 1, 2.5];
  const observation = fc.tuple(
    fc.constantFrom('chat', 'responses', 'messages'),
    fc.constantFrom('true', 'false'),
    fc.oneof(fc.constantFrom(...BUCKETS, 0, 10), fc.double({ min: -1, max: 20, noNaN: true })),
  );

  /** prom-client's own histogram and the summed one, fed alike, each in a registry of its own. */
  function pair(): { own: Registry; summed: Registry; observe(endpoint: string, stream: string, value: number): void } {
    const own = new Registry();
    const summed = new Registry();
    const options = { name: 'tollgate_test_seconds', help: 'A test histogram.', labelNames: ['endpoint', 'stream'] as const, buckets: BUCKETS };
    const reference = new Histogram({ ...options, labelNames: [...options.labelNames], registers: [own] });
    const ours = new SummedHistogram({ ...options, registers: [summed] });
    return {
      own,
      summed,
      observe(endpoint, stream, value) {
        reference.labels(endpoint, stream).observe(value);
        ours.observe(value, [endpoint, stream]);
      },
    };
  }

  it("reads out as prom-client's histogram does for the same observations: text, JSON, after a reset (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), fc.array(observation, { maxLength: 20 }), async (first, second) => {
        const { own, summed, observe } = pair();
        for (const [endpoint, stream, value] of first) observe(endpoint, stream, value);
        expect(await summed.metrics()).toBe(await own.metrics());
        expect(await summed.getMetricsAsJSON()).toEqual(await own.getMetricsAsJSON());
        own.resetMetrics();
        summed.resetMetrics();
        for (const [endpoint, stream, value] of second) observe(endpoint, stream, value);
        expect(await summed.metrics()).toBe(await own.metrics());
      }),
      { numRuns: 200 },
    );
  });

  it("without labels reads out as prom-client's: its zero series from the start, none after a reset until observed (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 30 }), fc.array(observation, { maxLength: 10 }), async (first, second) => {
        const own = new Registry();
        const summed = new Registry();
        const options = { name: 'tollgate_commit_seconds', help: 'A histogram without labels.', buckets: BUCKETS };
        const reference = new Histogram({ ...options, registers: [own] });
        const ours = new SummedHistogram({ ...options, labelNames: [], registers: [summed] });
        expect(await summed.metrics()).toBe(await own.metrics());
        for (const [, , value] of first) {
          reference.observe(value);
          ours.observe(value, []);
        }
        expect(await summed.metrics()).toBe(await own.metrics());
        expect(await summed.getMetricsAsJSON()).toEqual(await own.getMetricsAsJSON());
        own.resetMetrics();
        summed.resetMetrics();
        expect(await summed.metrics()).toBe(await own.metrics());
        for (const [, , value] of second) {
          reference.observe(value);
          ours.observe(value, []);
        }
        expect(await summed.metrics()).toBe(await own.metrics());
      }),
      { numRuns: 100 },
    );
  });

  it('drops a value that is not a finite number, where prom-client would throw inside the request', async () => {
    const { own, summed, observe } = pair();
    observe('chat', 'false', 0.2);
    const ours = new SummedHistogram({ name: 'tollgate_nan_seconds', help: 'x', labelNames: ['endpoint'] as const, buckets: BUCKETS, registers: [summed] });
    ours.observe(Number.NaN, ['chat']);
    ours.observe(Number.POSITIVE_INFINITY, ['chat']);
    expect(await summed.metrics()).toContain(await own.metrics());
    expect(await summed.metrics()).not.toContain('tollgate_nan_seconds_count');
  });
});
