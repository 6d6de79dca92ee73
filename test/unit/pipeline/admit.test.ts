/**
 * admit() holds one guarantee: a request takes from every bucket, reserves
 * in every budget and is recorded as pending — all of it or none of it — and
 * nothing leaves for the upstream unrecorded. Tested here in that function;
 * end to end in test/limits/http-admission.test.ts and test/ledger.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TollgateError } from '../../../src/errors.js';
import { bindingsFor } from '../../../src/keys/caller.js';
import { parseLimit } from '../../../src/limits/algorithm/policy.js';
import { formatMicrosFixed } from '../../../src/money.js';
import { admit } from '../../../src/pipeline/admit.js';
import type { EstimatedRequest } from '../../../src/pipeline/context.js';
import { issue, startHarness, type PipelineHarness } from '../../support/pipeline.js';

let harness: PipelineHarness;
afterEach(() => harness.close());

/** What each of a request's buckets has left, as the limiter sees it. */
function remaining(request: EstimatedRequest): number[] {
  const { limiter, tollgate } = harness.test;
  return bindingsFor(request.caller, tollgate.config.globalLimits).map(({ bucket }) => limiter.peek(bucket).remaining);
}

async function refusal(promise: Promise<unknown>): Promise<TollgateError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TollgateError) return error;
    throw error;
  }
  throw new Error('admit did not refuse');
}

describe('admit', () => {
  it('takes every bucket, reserves the budget and has the pending row on disk when it returns', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    harness.test.store.createTenant('acme', { limits: [parseLimit('requests:5/min')] });
    const key = issue(
      harness,
      'alpha',
      { limits: [parseLimit('requests:10/min'), parseLimit('tokens:100000/min')], budget: { microUsd: 1_000_000, period: 'day' } },
      'acme',
    );
    const request = harness.request(key);

    const admitted = await admit(request, harness.test.tollgate.pipeline);

    expect(harness.row(request.requestId)).toMatchObject({ status: 'pending', est_cost_micros: request.estimate.reservedMicroUsd });
    expect(remaining(request)).toEqual([9, 100_000 - request.estimate.reservedTokens, 4]);
    expect(admitted.admission.headers['x-tollgate-budget-remaining-usd']).toBe(formatMicrosFixed(1_000_000 - request.estimate.reservedMicroUsd));
    expect(harness.finished).toEqual([]);
  });

  it('leaves every bucket as it was when a budget cannot hold the request, and files it as refused', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    const key = issue(harness, 'thrifty', { limits: [parseLimit('requests:10/min')], budget: { microUsd: 1, period: 'day' } });
    const request = harness.request(key);

    const error = await refusal(admit(request, harness.test.tollgate.pipeline));

    expect(error.code).toBe('insufficient_quota');
    expect(remaining(request)).toEqual([10]);
    expect(harness.row(request.requestId)).toBeUndefined(); // not committed yet: refusals ride the next commit
    harness.test.ledger.flush();
    expect(harness.row(request.requestId)).toMatchObject({ status: 'rejected', cost_micros: 0 });
    expect(harness.finished).toMatchObject([{ kind: 'refused', requestId: request.requestId, reason: 'budget', code: 'insufficient_quota' }]);
  });

  it('takes nothing from the key when its tenant refuses', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    harness.test.store.createTenant('tight', { limits: [parseLimit('requests:1/min')] });
    const key = issue(harness, 'member', { limits: [parseLimit('requests:10/min')] }, 'tight');

    await admit(harness.request(key), harness.test.tollgate.pipeline);
    const second = harness.request(key);
    const error = await refusal(admit(second, harness.test.tollgate.pipeline));

    expect(error.code).toBe('rate_limit_exceeded');
    expect(remaining(second)).toEqual([9, 0]);
    expect(harness.finished).toMatchObject([{ kind: 'refused', reason: 'rate_limit' }]);
  });

  it('never lets a request go unrecorded: a row that cannot be written is a 503 and every bucket is given back', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    const key = issue(harness, 'unlucky', { limits: [parseLimit('requests:10/min')] });
    // A real SQLite failure on insert (as a full disk would give), not a mock.
    harness.test.db.database.sqlite.exec(`CREATE TRIGGER refuse_rows BEFORE INSERT ON ledger BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
    const request = harness.request(key);

    const error = await refusal(admit(request, harness.test.tollgate.pipeline));

    expect(error.code).toBe('ledger_unavailable');
    expect(error.status).toBe(503);
    expect(remaining(request)).toEqual([10]);
    harness.test.db.database.sqlite.exec('DROP TRIGGER refuse_rows');
    harness.test.ledger.flush();
    expect(harness.row(request.requestId)).toBeUndefined();
  });

  it('admits exactly as many concurrent requests as the budget holds', async () => {
    harness = startHarness();
    const probe = harness.request(issue(harness, 'probe', { limits: [] }));
    const cost = probe.estimate.reservedMicroUsd;
    const key = issue(harness, 'shared', { limits: [], budget: { microUsd: cost * 3 + Math.floor(cost / 2), period: 'day' } });

    const results = await Promise.allSettled(Array.from({ length: 8 }, () => admit(harness.request(key), harness.test.tollgate.pipeline)));

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'rejected').map((r) => ((r as PromiseRejectedResult).reason as TollgateError).code)).toEqual(
      Array(5).fill('insufficient_quota'),
    );
  });
});
