import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANTHROPIC_BATCH_LIMITS,
  ANTHROPIC_BATCH_TARGET,
  AnthropicBatchRequests,
  anthropicBatchSizeError,
  readAnthropicBatchItem,
} from '../../../src/batches/anthropic-batch.js';

const params = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe("an Anthropic Message Batch's requests", () => {
  it('reads a good item as a Messages request', () => {
    expect(readAnthropicBatchItem({ custom_id: 'job_1-a', params }, 4)).toEqual({
      ok: true,
      value: {
        line: null,
        bodyParam: 'requests[4].params',
        customId: 'job_1-a',
        target: { url: '/v1/messages/batches', endpoint: 'messages' },
        model: 'claude-sonnet-4-5',
        body: params,
      },
    });
  });

  it.each([
    ['a custom_id with a dot', { custom_id: 'a.b', params }, 'invalid_value', 'requests[2].custom_id'],
    ['a custom_id of 65 characters', { custom_id: 'a'.repeat(65), params }, 'invalid_value', 'requests[2].custom_id'],
    ['an empty custom_id', { custom_id: '', params }, 'invalid_value', 'requests[2].custom_id'],
    ['no custom_id', { params }, 'missing_required_parameter', 'requests[2].custom_id'],
    ['no params', { custom_id: 'a' }, 'missing_required_parameter', 'requests[2].params'],
    ['params as an array', { custom_id: 'a', params: [] }, 'invalid_type', 'requests[2].params'],
    ['params without a model', { custom_id: 'a', params: { max_tokens: 1 } }, 'missing_required_parameter', 'requests[2].params.model'],
    ['an item that is a string', 'x', 'invalid_type', 'requests[2]'],
  ])('refuses %s', (_name, item, code, param) => {
    const read = readAnthropicBatchItem(item, 2);
    expect(read.ok ? undefined : [read.error.code, read.error.line, read.error.param]).toEqual([code, null, param]);
  });

  it('accepts a custom_id of exactly 64 characters', () => {
    expect(readAnthropicBatchItem({ custom_id: 'A'.repeat(64), params }, 0).ok).toBe(true);
  });

  it('refuses a custom_id used twice and lets models differ', () => {
    const batch = new AnthropicBatchRequests();
    expect(batch.add({ custom_id: 'a', params }).ok).toBe(true);
    expect(batch.add({ custom_id: 'b', params: { ...params, model: 'claude-haiku-4-5' } }).ok).toBe(true);
    const again = batch.add({ custom_id: 'a', params });
    expect(again.ok ? undefined : [again.error.code, again.error.param]).toEqual(['duplicate_custom_id', 'requests[2].custom_id']);
  });

  it("uses Anthropic's documented limits: 100,000 requests, 256 MB, to the Messages dialect", () => {
    expect(ANTHROPIC_BATCH_LIMITS).toEqual({ maxRequests: 100_000, maxBytes: 256 * 1024 * 1024 });
    expect(ANTHROPIC_BATCH_TARGET).toEqual({ url: '/v1/messages/batches', endpoint: 'messages' });
  });

  it('holds at most 100,000 requests and needs at least one', () => {
    const batch = new AnthropicBatchRequests();
    for (let n = 0; n < 100_000; n += 1) batch.add({ custom_id: `r${n}`, params });
    expect(batch.finish()).toBeUndefined();
    const over = batch.add({ custom_id: 'one-more', params });
    expect(over.ok ? undefined : over.error.code).toBe('too_many_tasks');
    expect(new AnthropicBatchRequests().finish()?.code).toBe('empty_file');
  });

  it('refuses a batch body over 256 MB', () => {
    expect(anthropicBatchSizeError(256 * 1024 * 1024)).toBeUndefined();
    expect(anthropicBatchSizeError(256 * 1024 * 1024 + 1)?.code).toBe('file_too_large');
  });

  it('never throws on arbitrary items', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 10 }), (items) => {
        const batch = new AnthropicBatchRequests({ maxRequests: 6, maxBytes: 1_000 });
        for (const item of items) batch.add(item);
        batch.finish();
      }),
      { numRuns: 300 },
    );
  });
});
