/**
 * What a batch pays into and what its output lines bill (src/batch-jobs): request buckets and
 * day-long token and USD buckets take a batch, shorter ones do not; an output line bills its
 * usage only when it was answered, as the provider bills it.
 */
import { describe, expect, it } from 'vitest';
import { batchBindings } from '../../../src/batch-jobs/admit-batch.js';
import { lineUsage } from '../../../src/batch-jobs/follower.js';
import { bindLimits } from '../../../src/limits/index.js';
import { parseLimit } from '../../../src/domain/policy.js';

describe('batchBindings', () => {
  it('keeps request limits of every period and token and USD limits of a day', () => {
    const limits = ['requests:60/min', 'requests:1000/day', 'tokens:100000/min', 'tokens:5000000/day', 'usd:2/h', 'usd:50/day'].map((text) => parseLimit(text));
    const kept = batchBindings(bindLimits('key', 'key_1', limits)).map((binding) => binding.limit.name);
    expect(kept).toEqual(['requests-per-min', 'requests-per-day', 'tokens-per-day', 'usd-per-day']);
  });
});

describe('lineUsage', () => {
  const answered = (status: number) =>
    JSON.stringify({
      id: 'batch_req_1',
      custom_id: 'q-1',
      response: { status_code: status, request_id: 'r', body: { usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } } },
      error: null,
    });

  it("bills an answered line's reported usage", () => {
    expect(lineUsage(answered(200))).toMatchObject({ promptTokens: 12, completionTokens: 5 });
  });

  it('bills nothing for an errored line, a refused one, a blank one or one that is not JSON', () => {
    expect(lineUsage(answered(400))).toBeUndefined();
    expect(lineUsage(JSON.stringify({ id: 'x', custom_id: 'q', response: null, error: { code: 'batch_expired', message: 'expired' } }))).toBeUndefined();
    expect(lineUsage('')).toBeUndefined();
    expect(lineUsage('{not json')).toBeUndefined();
    expect(lineUsage('[1,2]')).toBeUndefined();
  });
});
