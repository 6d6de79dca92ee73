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
import { reservationCost } from '../../../src/estimate/estimate-body.js';
import { bindingsFor } from '../../../src/limits/index.js';
import { parseLimit } from '../../../src/domain/policy.js';
import { admit } from '../../../src/pipeline/admit.js';
import type { Ending } from '../../../src/pipeline/context.js';
import { costOfEnding, settleForwarded, stopForwarded } from '../../../src/pipeline/settle.js';
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

describe('stopForwarded', () => {
  it('settles a request open at shutdown at its reservation, aborts its upstream, and leaves none open', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    const key = issue(harness, 'stopped', { limits: [parseLimit('tokens:100000/min')] });
    const request = harness.request(key);
    const pipeline = harness.test.tollgate.pipeline;
    const admitted = await admit(request, pipeline);
    const open = pipeline.open!;
    open.track(admitted, () => stopForwarded(admitted, {}, pipeline));
    const idle = open.idle();

    expect(open.stopAll()).toBe(1);
    await idle;
    settleForwarded(admitted, reported(8, 20), pipeline);
    harness.test.ledger.flush();

    expect(open.size).toBe(0);
    expect(admitted.upstreamAbort.aborted).toBe(true);
    expect(harness.row(request.requestId)).toMatchObject({ status: 'upstream_interrupted', cost_micros: request.estimate.reservedMicroUsd });
    // The buckets keep the whole reservation: max_tokens 100 and the prompt.
    expect(harness.test.limiter.peek(bindingsFor(request.caller, [])[0]!.bucket).remaining).toBe(100_000 - request.estimate.reservedTokens);
  });
});

describe('costOfEnding', () => {
  const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1000 };
  const estimate = estimateRequestSync('chat', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 }, options);
  /** Estimates whose reservations price more than text: the priority tier, n > 1, built-in tools, audio output, a prompt cache write. */
  const estimates = [
    estimate,
    estimateRequestSync('chat', { model: 'o4-mini', n: 2, service_tier: 'priority', messages: [{ role: 'user', content: 'Think.' }] }, options),
    estimateRequestSync('responses', { model: 'gpt-4.1', input: 'Search foxes.', tools: [{ type: 'web_search_preview' }], max_output_tokens: 300 }, options),
    estimateRequestSync(
      'chat',
      {
        model: 'gpt-4o-audio-preview',
        messages: [{ role: 'user', content: 'Sing.' }],
        modalities: ['text', 'audio'],
        audio: { voice: 'alloy', format: 'wav' },
      },
      options,
    ),
    estimateRequestSync(
      'messages',
      {
        model: 'claude-opus-4-6',
        max_tokens: 400,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Cache me.', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
      },
      options,
    ),
  ];
  const countTokens = (text: string): number => text.length;
  const base = { estimate, accepted: true, upstreamError: false, complete: false, streamedText: '', reservedCompletionTokens: 50, countTokens };
  const usage = fc.record({
    promptTokens: fc.nat(1_000_000),
    cachedTokens: fc.constant(0),
    completionTokens: fc.nat(1_000_000),
    reasoningTokens: fc.constant(0),
  });

  it('bills reported usage whatever else happened', () => {
    fc.assert(
      fc.property(
        usage,
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.string(),
        fc.nat(10_000),
        (reportedUsage, accepted, upstreamError, complete, streamedText, reserved) => {
          const result = costOfEnding({
            ...base,
            reported: reportedUsage,
            accepted,
            upstreamError,
            complete,
            streamedText,
            reservedCompletionTokens: reserved,
          });
          expect(result).toEqual({ usage: reportedUsage, costMicros: costMicroUsd(reportedUsage, estimate.price), source: 'reported' });
        },
      ),
    );
  });

  it('bills nothing for an upstream error or a request that never reached the upstream, finished or not', () => {
    for (const complete of [true, false]) {
      expect(costOfEnding({ ...base, reported: undefined, upstreamError: true, complete, streamedText: 'partial' })).toMatchObject({
        costMicros: 0,
        source: 'none',
      });
      expect(costOfEnding({ ...base, reported: undefined, accepted: false, complete })).toMatchObject({ costMicros: 0, source: 'none' });
    }
  });

  it('bills the prompt and the text of an answer that reached its end without usage', () => {
    const result = costOfEnding({ ...base, reported: undefined, complete: true, streamedText: 'twelve chars' });
    expect(result.usage).toEqual({ promptTokens: estimate.promptTokens, cachedTokens: 0, completionTokens: 12, reasoningTokens: 0 });
    expect(result.source).toBe('counted');
  });

  it('bills the reservation when the upstream took the request and its usage never came, whatever text streamed', () => {
    for (const streamedText of ['', 'twelve chars']) {
      const result = costOfEnding({ ...base, reported: undefined, streamedText });
      expect(result.usage).toMatchObject({ promptTokens: estimate.promptTokens, completionTokens: 50, reasoningTokens: 0 });
      expect(result).toMatchObject({ costMicros: estimate.reservedMicroUsd, source: 'reserved' });
    }
    // A budget's plan reserved less than the estimate: that is what the request holds.
    expect(costOfEnding({ ...base, reported: undefined, reservedCompletionTokens: 20 }).usage.completionTokens).toBe(20);
  });

  it('never bills an unfinished answer below the text it visibly carried', () => {
    const text = 'x'.repeat(80);
    const result = costOfEnding({ ...base, reported: undefined, streamedText: text });
    expect(result.usage.completionTokens).toBe(80);
    expect(result.costMicros).toBe(costMicroUsd({ promptTokens: estimate.promptTokens, completionTokens: 80 }, estimate.price));
  });

  it("bills the prompt Messages' message_start reported, and the reservation's output, when the stream ended before its usage", () => {
    const messages = estimates[4]!;
    const promptUsage = { promptTokens: 30, cachedTokens: 10, cacheWrite1hTokens: 20, completionTokens: 1, reasoningTokens: 0 };
    const result = costOfEnding({ ...base, estimate: messages, reported: undefined, reportedPrompt: promptUsage, reservedCompletionTokens: 400 });
    expect(result.usage).toMatchObject({ promptTokens: 30, cachedTokens: 10, cacheWrite1hTokens: 20, completionTokens: 400 });
    expect(result.source).toBe('reserved');
    const finished = costOfEnding({ ...base, estimate: messages, reported: undefined, reportedPrompt: promptUsage, complete: true, streamedText: 'abc' });
    expect(finished.usage).toMatchObject({ promptTokens: 30, cacheWrite1hTokens: 20, completionTokens: 3 });
    expect(finished.source).toBe('counted');
  });

  /**
   * A provider that bills hidden output (reasoning, thinking) and honours the output limit the
   * reservation covers: whatever it generated before an answer ended without its usage, the
   * ledger is at least its bill; and never more than the reservation unless the upstream
   * reported more or visibly sent more.
   */
  it('bills an ending at least what a provider billing hidden output could bill, and within the reservation', () => {
    const ending = fc.record({
      which: fc.nat(estimates.length - 1),
      accepted: fc.boolean(),
      upstreamError: fc.boolean(),
      complete: fc.boolean(),
      reservedShare: fc.double({ min: 0, max: 1, noNaN: true }),
      visible: fc.nat(3_000),
      hiddenShare: fc.double({ min: 0, max: 1, noNaN: true }),
      toolsUsed: fc.boolean(),
    });
    fc.assert(
      fc.property(ending, (e) => {
        const chosen = estimates[e.which]!;
        const reserved = Math.floor(chosen.completionTokensReserved * e.reservedShare);
        const input = { ...base, estimate: chosen, reported: undefined, ...e, streamedText: 'x'.repeat(e.visible), reservedCompletionTokens: reserved };
        const result = costOfEnding(input);
        const { audioCompletion, ...prompt } = chosen.reservationBase;
        // What the provider could bill: nothing unless it took the request without an error status;
        // for a finished answer its visible text; for an unfinished one hidden output up to the limit too.
        const hidden = Math.floor(Math.max(0, reserved - e.visible) * e.hiddenShare);
        const completion = e.complete ? e.visible : e.visible + hidden;
        const providerBill =
          !e.accepted || e.upstreamError
            ? 0
            : costMicroUsd(
                {
                  promptTokens: chosen.promptTokens,
                  serviceTier: prompt.serviceTier,
                  ...(e.toolsUsed && !e.complete ? { toolCalls: prompt.toolCalls } : {}),
                  completionTokens: completion,
                  audioCompletionTokens: audioCompletion && !e.complete ? completion : 0,
                },
                chosen.price,
                chosen.toolRates,
              );
        expect(result.costMicros).toBeGreaterThanOrEqual(providerBill);
        if (!e.complete && e.visible <= reserved) {
          expect(result.costMicros).toBeLessThanOrEqual(reservationCost(chosen.reservationBase, reserved, chosen.price, chosen.toolRates));
        }
        if (!e.complete && e.accepted && !e.upstreamError && e.visible <= reserved && reserved === chosen.completionTokensReserved) {
          // The whole reservation budgets hold, unseen input at its bound included (rate limits take less: estimate-body.ts).
          expect(result.costMicros).toBe(reservationCost(chosen.reservationBase, chosen.completionTokensReserved, chosen.price, chosen.toolRates));
        }
      }),
      { numRuns: 500 },
    );
  });
});
