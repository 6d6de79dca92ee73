/**
 * settleForwarded() holds one guarantee: an admitted request is settled
 * exactly once — its ledger row, its buckets and its budgets move from the
 * reservation to the actual cost once, however many parts of the path see it
 * end. costOfEnding() is the pure rule for what an ending costs.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { estimateRequestSync } from '../../../src/estimate/index.js';
import { builtinPriceTable, costMicroUsd } from '../../../src/estimate/prices.js';
import { bindingsFor } from '../../../src/keys/caller.js';
import { parseLimit } from '../../../src/limits/algorithm/policy.js';
import { admit } from '../../../src/pipeline/admit.js';
import type { Ending } from '../../../src/pipeline/context.js';
import { costOfEnding, settleForwarded } from '../../../src/pipeline/settle.js';
import { issue, startHarness, type PipelineHarness } from '../../support/pipeline.js';

let harness: PipelineHarness | undefined;
afterEach(() => harness?.close());

const reported = (promptTokens: number, completionTokens: number): Ending => ({
  outcome: 'ok',
  status: 200,
  accepted: true,
  usage: { promptTokens, cachedTokens: 0, completionTokens, reasoningTokens: 0 },
  streamedText: '',
  firstTokenAt: undefined,
  upstreamRequestId: 'up-1',
  errorCode: undefined,
});

describe('settleForwarded', () => {
  it('settles once: a second ending changes neither the row, nor the buckets, nor the observers', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    const key = issue(harness, 'once', { limits: [parseLimit('tokens:100000/min')] });
    const request = harness.request(key);
    const admitted = await admit(request, harness.test.tollgate.pipeline);
    const [binding] = bindingsFor(request.caller, []);

    settleForwarded(admitted, reported(8, 20), harness.test.tollgate.pipeline);
    settleForwarded(admitted, reported(500, 900), harness.test.tollgate.pipeline);
    harness.test.ledger.flush();

    const price = request.estimate.price;
    const cost = costMicroUsd({ promptTokens: 8, cachedTokens: 0, completionTokens: 20 }, price);
    expect(harness.row(request.requestId)).toMatchObject({ status: 'ok', prompt_tokens: 8, cost_micros: cost });
    expect(harness.test.limiter.peek(binding!.bucket).remaining).toBe(100_000 - 28);
    expect(harness.finished.filter((e) => e.kind === 'settled')).toHaveLength(1);
  });

  it('gives the whole reservation back when the upstream answered with an error', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    const key = issue(harness, 'failed', { limits: [parseLimit('tokens:100000/min')] });
    const request = harness.request(key);
    const admitted = await admit(request, harness.test.tollgate.pipeline);

    settleForwarded(admitted, { ...reported(0, 0), outcome: 'upstream_error', status: 500, accepted: false, usage: undefined }, harness.test.tollgate.pipeline);
    harness.test.ledger.flush();

    expect(harness.row(request.requestId)).toMatchObject({ status: 'upstream_error', cost_micros: 0 });
    expect(harness.test.limiter.peek(bindingsFor(request.caller, [])[0]!.bucket).remaining).toBe(100_000);
  });
});

describe('costOfEnding', () => {
  const estimate = estimateRequestSync(
    'chat',
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 },
    { prices: builtinPriceTable, defaultMaxCompletionTokens: 1000 },
  );
  const countTokens = (text: string): number => text.length;
  const usage = fc.record({
    promptTokens: fc.nat(1_000_000),
    cachedTokens: fc.constant(0),
    completionTokens: fc.nat(1_000_000),
    reasoningTokens: fc.constant(0),
  });

  it('bills reported usage whatever else happened', () => {
    fc.assert(
      fc.property(usage, fc.boolean(), fc.boolean(), fc.string(), (reportedUsage, accepted, upstreamError, streamedText) => {
        const result = costOfEnding({ estimate, reported: reportedUsage, accepted, upstreamError, streamedText, countTokens });
        expect(result).toEqual({ usage: reportedUsage, costMicros: costMicroUsd(reportedUsage, estimate.price), source: 'reported' });
      }),
    );
  });

  it('bills nothing for an upstream error or a request that never reached the upstream', () => {
    expect(costOfEnding({ estimate, reported: undefined, accepted: true, upstreamError: true, streamedText: 'partial', countTokens })).toMatchObject({
      costMicros: 0,
      source: 'none',
    });
    expect(costOfEnding({ estimate, reported: undefined, accepted: false, upstreamError: false, streamedText: '', countTokens })).toMatchObject({
      costMicros: 0,
      source: 'none',
    });
  });

  it('bills the prompt and the streamed text when the answer ended before its usage', () => {
    const result = costOfEnding({ estimate, reported: undefined, accepted: true, upstreamError: false, streamedText: 'twelve chars', countTokens });
    expect(result.usage).toEqual({ promptTokens: estimate.promptTokens, cachedTokens: 0, completionTokens: 12, reasoningTokens: 0 });
    expect(result.source).toBe('counted');
  });
});
