import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readAnthropicBatchItem } from '../../../src/batches/anthropic-batch.js';
import { BatchCost, batchErrorOf, batchLineCost, batchPriceOf, estimateBatchRequest, type BatchLineCost } from '../../../src/batches/batch-estimate.js';
import { OpenAiBatchFile, readOpenAiBatchLine, type BatchRequest } from '../../../src/batches/batch-lines.js';
import { JsonlSplitter } from '../../../src/batches/jsonl-lines.js';
import { reservationCost, type CounterFactory } from '../../../src/estimate/estimate-body.js';
import { builtinPriceTable, EstimateInputError, estimateRequest, resolvePrice } from '../../../src/estimate/index.js';
import type { PriceTable } from '../../../src/estimate/price-types.js';
import { createTextCounter } from '../../../src/estimate/text-counter.js';
import { loadEncodingSync } from '../../../src/estimate/tokenizer.js';

const counter: CounterFactory = (encoding) => createTextCounter(loadEncodingSync(encoding), { cache: null });
const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1_000 };
const hi = [{ role: 'user', content: 'hi' }];

function openAiLine(url: string, body: Record<string, unknown>, customId = 'r1'): BatchRequest {
  const read = readOpenAiBatchLine(JSON.stringify({ custom_id: customId, method: 'POST', url, body }), 1);
  if (!read.ok) throw new Error(read.error.message);
  return read.value;
}

function anthropicItem(params: Record<string, unknown>, index = 0): BatchRequest {
  const read = readAnthropicBatchItem({ custom_id: `r${index}`, params }, index);
  if (!read.ok) throw new Error(read.error.message);
  return read.value;
}

function costOf(request: BatchRequest, opts = options): BatchLineCost {
  const result = estimateBatchRequest(request, opts, counter);
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

// Hand prices (µUSD per 1M tokens) are the built-in table's halved: gpt-4o $2.50 / $10 → 1.25 / 5 per 1M.
describe('the worst case of one batch line, at batch prices', () => {
  it('chat with max_tokens: the prompt plus max_tokens at half price', () => {
    // Prompt: 3 per message + 1 ("user") + 1 ("hi") + 3 of reply priming = 8 tokens.
    const cost = costOf(openAiLine('/v1/chat/completions', { model: 'gpt-4o', messages: hi, max_tokens: 100 }));
    expect(cost).toEqual({ model: 'gpt-4o', endpoint: 'chat', promptTokens: 8, completionTokens: 100, inputs: 1, microUsd: 510, syncMicroUsd: 1_020 });
    // 8 × 1.25 + 100 × 5 = 10 + 500 µUSD.
  });

  it('chat without max_tokens: the model output limit, not the default reservation', () => {
    const cost = costOf(openAiLine('/v1/chat/completions', { model: 'gpt-4o', messages: hi }));
    // gpt-4o writes at most 16,384 tokens: 8 × 1.25 + 16,384 × 5 = 10 + 81,920.
    expect([cost.completionTokens, cost.microUsd]).toEqual([16_384, 81_930]);
  });

  it('a reasoning model without a limit: its whole output limit, reasoning included', () => {
    // o3: $2 / $8 → 1 / 4 per 1M; 2 tokens of priming on reasoning models, so 7 prompt tokens.
    const open = costOf(openAiLine('/v1/chat/completions', { model: 'o3', messages: hi }));
    expect([open.promptTokens, open.completionTokens, open.microUsd]).toEqual([7, 100_000, 400_007]);
    const bounded = costOf(openAiLine('/v1/chat/completions', { model: 'o3', messages: hi, max_completion_tokens: 1_000 }));
    expect(bounded.microUsd).toBe(7 + 4_000);
  });

  it('responses: max_output_tokens at half price, rounded up once', () => {
    // gpt-5-mini: $0.25 / $2 → 0.125 / 1 per 1M; 7 × 0.125 + 500 × 1 = 500.875 → 501 (sync 1,001.75 → 1,002).
    const cost = costOf(openAiLine('/v1/responses', { model: 'gpt-5-mini', input: 'hi', max_output_tokens: 500 }));
    expect([cost.promptTokens, cost.completionTokens, cost.microUsd, cost.syncMicroUsd]).toEqual([7, 500, 501, 1_002]);
  });

  it('embeddings: every input at half price, nothing generated', () => {
    // 1,000 × "hello world" (2 tokens) at text-embedding-3-large's $0.13 → 0.065 per 1M: 2,000 × 0.065 = 130.
    const input = Array.from({ length: 1_000 }, () => 'hello world');
    const cost = costOf(openAiLine('/v1/embeddings', { model: 'text-embedding-3-large', input }));
    expect(cost).toEqual({
      model: 'text-embedding-3-large',
      endpoint: 'embeddings',
      promptTokens: 2_000,
      completionTokens: 0,
      inputs: 1_000,
      microUsd: 130,
      syncMicroUsd: 260,
    });
  });

  it('completions: every choice of every prompt', () => {
    // gpt-3.5-turbo-instruct $1.50 / $2 → 0.75 / 1; 1 prompt token, n = 2 × 50: 0.75 + 100 = 100.75 → 101.
    const cost = costOf(openAiLine('/v1/completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'hi', max_tokens: 50, n: 2 }));
    expect([cost.promptTokens, cost.completionTokens, cost.microUsd, cost.syncMicroUsd]).toEqual([1, 100, 101, 202]);
  });

  it("Anthropic messages: Claude's upper-bound count and max_tokens at half price", () => {
    // Claude's bound: 16 per request + 8 per message + 2 ("hi": its bytes) = 26; claude-sonnet-4-5 $3 / $15 → 1.5 / 7.5.
    const cost = costOf(anthropicItem({ model: 'claude-sonnet-4-5', max_tokens: 1_000, messages: hi }));
    expect(cost).toEqual({
      model: 'claude-sonnet-4-5',
      endpoint: 'messages',
      promptTokens: 26,
      completionTokens: 1_000,
      inputs: 1,
      microUsd: 7_539,
      syncMicroUsd: 15_078,
    });
  });

  it('Anthropic cache writes at 1.25 × the batch input price', () => {
    // One text block (+4) with cache_control: 30 tokens written at 1.875 per 1M = 56.25, + 7,500 → 7,557.
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }];
    const cost = costOf(anthropicItem({ model: 'claude-sonnet-4-5', max_tokens: 1_000, messages }));
    expect([cost.promptTokens, cost.microUsd]).toEqual([30, 7_557]);
  });

  it('a price entry with its own batch prices is billed at those', () => {
    const prices: PriceTable = {
      ...builtinPriceTable,
      models: {
        ...builtinPriceTable.models,
        'house-model': {
          inputMicroUsdPer1M: 1_000_000,
          cachedInputMicroUsdPer1M: 1_000_000,
          outputMicroUsdPer1M: 4_000_000,
          batch: { inputMicroUsdPer1M: 600_000, cachedInputMicroUsdPer1M: 600_000, outputMicroUsdPer1M: 3_000_000 },
        },
      },
    };
    // 8 × 0.6 + 100 × 3 = 304.8 → 305 (half would have been 204).
    const cost = costOf(openAiLine('/v1/chat/completions', { model: 'house-model', messages: hi, max_tokens: 100 }), { ...options, prices });
    expect([cost.microUsd, cost.syncMicroUsd]).toEqual([305, 408]);
  });

  it('a service_tier in a line changes nothing: a batch has its own price', () => {
    const cost = costOf(openAiLine('/v1/chat/completions', { model: 'gpt-4o', messages: hi, max_tokens: 100, service_tier: 'priority' }));
    expect(cost.microUsd).toBe(510);
    expect(cost.syncMicroUsd).toBeGreaterThan(1_020);
  });

  it('keeps built-in tool calls and audio at their full prices', () => {
    const price = resolvePrice('gpt-4o-audio-preview', builtinPriceTable);
    const batch = batchPriceOf(price);
    expect(batch.audio).toEqual(price.audio);
    const rates = { webSearchCall: 10_000, fileSearchCall: 2_500, codeInterpreterContainer: 30_000, imageGenerationCall: 0 };
    const base = { promptTokens: 0, cachedTokens: 0, audioPromptTokens: 0, serviceTier: 'standard', toolCalls: { webSearch: 3 }, audioCompletion: false };
    expect(reservationCost(base, 0, batch, rates)).toBe(30_000);
  });

  it("halves Anthropic's long-context prices too", () => {
    const price = resolvePrice('claude-sonnet-4-5', builtinPriceTable);
    expect(batchPriceOf(price).longContext).toEqual({
      aboveTokens: 200_000,
      prices: { inputMicroUsdPer1M: 3_000_000, cachedInputMicroUsdPer1M: 300_000, outputMicroUsdPer1M: 11_250_000 },
    });
  });

  it('refuses what the estimate refuses, naming the field under the body and the line', () => {
    const tooLong = estimateBatchRequest(openAiLine('/v1/chat/completions', { model: 'gpt-4o', messages: hi, max_tokens: 200_000 }), options, counter);
    expect(tooLong.ok ? undefined : [tooLong.error.code, tooLong.error.line, tooLong.error.param]).toEqual(['context_length_exceeded', 1, 'body.messages']);
    const noLimit = estimateBatchRequest(anthropicItem({ model: 'claude-sonnet-4-5', messages: hi }, 3), options, counter);
    expect(noLimit.ok ? undefined : [noLimit.error.code, noLimit.error.line, noLimit.error.param]).toEqual([
      'missing_required_parameter',
      null,
      'requests[3].params.max_tokens',
    ]);
  });
});

describe('the async path (the estimator that may use a worker)', () => {
  it('gives the same cost and the same errors as estimateBatchRequest', async () => {
    const request = openAiLine('/v1/responses', { model: 'gpt-5-mini', input: 'hi', max_output_tokens: 500 });
    expect(batchLineCost(await estimateRequest(request.target.endpoint, request.body, options), request.target.endpoint)).toEqual(costOf(request));
    const bad = anthropicItem({ model: 'claude-sonnet-4-5', messages: hi }, 5);
    const thrown = await estimateRequest(bad.target.endpoint, bad.body, options).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(EstimateInputError);
    const sync = estimateBatchRequest(bad, options, counter);
    expect(sync.ok ? undefined : sync.error).toEqual(batchErrorOf(thrown as EstimateInputError, bad));
  });
});

describe('a whole batch', () => {
  it('sums a file of lines, per model too', () => {
    const lines = [
      { custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o', messages: hi, max_tokens: 100 } },
      { custom_id: 'b', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o', messages: hi } },
    ];
    const splitter = new JsonlSplitter(1_000_000);
    const file = new OpenAiBatchFile();
    const sum = new BatchCost();
    for (const line of [...splitter.feed(new TextEncoder().encode(lines.map((l) => JSON.stringify(l)).join('\r\n'))), ...splitter.end()]) {
      const read = file.add(line);
      if (!read.ok) throw new Error(read.error.message);
      sum.add(costOf(read.value));
    }
    expect(file.finish()).toBeUndefined();
    const total = { requests: 2, promptTokens: 16, completionTokens: 100 + 16_384, inputs: 2, microUsd: 510 + 81_930 };
    expect(sum.total).toEqual(total);
    expect([...sum.byModel()]).toEqual([['gpt-4o', total]]);
  });

  it('refuses more than 50,000 embedding inputs across the batch', () => {
    const target = openAiLine('/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' }).target;
    const sum = new BatchCost();
    const line = { model: 'text-embedding-3-small', endpoint: 'embeddings', promptTokens: 1, completionTokens: 0, microUsd: 1, syncMicroUsd: 1 } as const;
    sum.add({ ...line, inputs: 50_000 });
    expect(sum.inputsError(target, 1)).toBeUndefined();
    sum.add({ ...line, inputs: 1 });
    expect(sum.inputsError(target, 2)).toMatchObject({ code: 'too_many_tasks', line: 2 });
  });

  it('totals are the sums of the lines, and the models partition them', () => {
    const cost = fc.record({
      model: fc.constantFrom('a', 'b', 'c'),
      endpoint: fc.constant('chat' as const),
      promptTokens: fc.nat({ max: 1_000_000 }),
      completionTokens: fc.nat({ max: 1_000_000 }),
      inputs: fc.integer({ min: 1, max: 100 }),
      microUsd: fc.nat({ max: 10_000_000_000 }),
      syncMicroUsd: fc.nat(),
    });
    fc.assert(
      fc.property(fc.array(cost, { maxLength: 50 }), (costs) => {
        const sum = new BatchCost();
        for (const c of costs) sum.add(c);
        const total = (list: typeof costs) => ({
          requests: list.length,
          promptTokens: list.reduce((s, c) => s + c.promptTokens, 0),
          completionTokens: list.reduce((s, c) => s + c.completionTokens, 0),
          inputs: list.reduce((s, c) => s + c.inputs, 0),
          microUsd: list.reduce((s, c) => s + c.microUsd, 0),
        });
        expect(sum.total).toEqual(total(costs));
        for (const [model, totals] of sum.byModel()) expect(totals).toEqual(total(costs.filter((c) => c.model === model)));
        expect([...sum.byModel().values()].reduce((s, t) => s + t.microUsd, 0)).toBe(sum.total.microUsd);
      }),
    );
  });
});

describe('batch price against synchronous price', () => {
  it('is ⌈sync / 2⌉ for every standard-tier line of the built-in table (its prices are even µUSD per 1M)', () => {
    const models = ['gpt-4o', 'gpt-4o-mini', 'o3', 'o4-mini', 'gpt-5-mini', 'gpt-5.4-nano', 'gpt-4.1', 'claude-sonnet-4-5', 'claude-3-haiku'];
    fc.assert(
      fc.property(
        fc.constantFrom(...models),
        fc.array(fc.string({ maxLength: 40 }), { minLength: 1, maxLength: 4 }),
        fc.option(fc.integer({ min: 1, max: 4_000 }), { nil: undefined }),
        (model, texts, maxTokens) => {
          const messages = texts.map((content) => ({ role: 'user', content }));
          const request = model.startsWith('claude')
            ? anthropicItem({ model, messages, max_tokens: maxTokens ?? 1 })
            : openAiLine('/v1/chat/completions', { model, messages, ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }) });
          const cost = costOf(request);
          expect(cost.microUsd).toBe(Math.ceil(cost.syncMicroUsd / 2));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is never below half and at most ⌈tokens / 2,000,000⌉ µUSD above it, whatever the prices', () => {
    const perMillion = fc.nat({ max: 200_000_000 });
    fc.assert(
      fc.property(perMillion, perMillion, perMillion, fc.nat({ max: 2_000_000 }), fc.nat({ max: 2_000_000 }), (input, cached, output, prompt, completion) => {
        const price = { inputMicroUsdPer1M: input, cachedInputMicroUsdPer1M: cached, outputMicroUsdPer1M: output };
        const rates = { webSearchCall: 0, fileSearchCall: 0, codeInterpreterContainer: 0, imageGenerationCall: 0 };
        const base = { promptTokens: prompt, cachedTokens: 0, audioPromptTokens: 0, serviceTier: 'standard', toolCalls: {}, audioCompletion: false };
        const sync = reservationCost(base, completion, price, rates);
        const batch = reservationCost(base, completion, batchPriceOf(price), rates);
        expect(batch).toBeGreaterThanOrEqual(Math.ceil(sync / 2));
        expect(batch).toBeLessThanOrEqual(Math.ceil(sync / 2) + Math.ceil((prompt + completion) / 2_000_000));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on an arbitrary body: a cost or an error', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('/v1/chat/completions', '/v1/responses', '/v1/embeddings', '/v1/completions', 'anthropic'),
        fc.dictionary(fc.constantFrom('messages', 'input', 'prompt', 'max_tokens', 'n', 'tools', 'max_output_tokens', 'system'), fc.jsonValue({ maxDepth: 3 })),
        (url, extra) => {
          const body = { ...extra, model: 'gpt-4o' };
          const request = url === 'anthropic' ? anthropicItem(body) : openAiLine(url, body);
          const result = estimateBatchRequest(request, options, counter);
          if (result.ok) expect(Number.isSafeInteger(result.value.microUsd)).toBe(true);
          else expect(typeof result.error.code).toBe('string');
        },
      ),
      { numRuns: 300 },
    );
  });
});
