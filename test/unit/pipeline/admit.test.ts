/**
 * admit() holds one guarantee: a request takes from every bucket, reserves
 * in every budget and is recorded as pending — all of it or none of it — and
 * nothing leaves for the upstream unrecorded. Tested here in that function;
 * end to end in test/unit/limits/http-admission.test.ts and test/ledger.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TollgateError } from '../../../src/domain/errors.js';
import { bindingsFor } from '../../../src/limits/index.js';
import { parseLimit } from '../../../src/domain/policy.js';
import { formatMicrosFixed } from '../../../src/domain/money.js';
import { admit } from '../../../src/pipeline/admit.js';
import { forward } from '../../../src/pipeline/forward.js';
import type { AdmittedRequest, EstimatedRequest } from '../../../src/pipeline/context.js';
import { DIALECTS } from '../../../src/dialects/index.js';
import { forwardedBody } from '../../../src/dialects/request-edits.js';
import { issue, startHarness, type PipelineHarness } from '../../support/pipeline.js';

let harness: PipelineHarness;
afterEach(() => harness.close());

/** What each of a request's buckets has left, as the limiter sees it. */
function remaining(request: EstimatedRequest): number[] {
  const { limiter, tollgate } = harness.test;
  return bindingsFor(request.caller, tollgate.config.globalLimits).map(({ bucket }) => limiter.peek(bucket).remaining);
}

/** The body an admitted request sends upstream. */
function sentBody(admitted: AdmittedRequest): Record<string, unknown> {
  return JSON.parse(forwardedBody(DIALECTS[admitted.endpoint], admitted, admitted.facts.model).toString()) as Record<string, unknown>;
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

describe('admit with a budget or a cost cap (README, "Budgets are hard caps")', () => {
  const reasoning = { model: 'o4-mini', max_tokens: undefined };

  it('caps a request the budget cannot hold whole: the cap goes upstream as its own limit, and the client is told', async () => {
    harness = startHarness();
    const key = issue(harness, 'thinker', { limits: [], budget: { microUsd: 50_000, period: 'day' } });
    const request = harness.request(key, reasoning);
    expect(request.estimate.completionBoundPerChoice).toBe(100_000);

    const admitted = await admit(request, harness.test.tollgate.pipeline);

    const cap = sentBody(admitted).max_completion_tokens as number;
    expect(cap).toBeGreaterThan(11_000);
    expect(cap).toBeLessThan(11_364);
    expect(admitted.admission.headers['x-tollgate-output-capped']).toBe(String(cap));
    expect(admitted.completionAllowance).toBe(cap);
    const row = harness.row(request.requestId)!;
    expect(row.est_cost_micros).toBeLessThanOrEqual(50_000);
    expect(row.est_cost_micros).toBeGreaterThan(49_000);
    // What the request holds, to settle it at should its usage never come (settle.ts, rule 4).
    expect(admitted.reservation).toEqual({ completionTokens: cap, microUsd: row.est_cost_micros });
  });

  it('reserves the worst case, not the default, when it fits — and sends the body unchanged', async () => {
    harness = startHarness();
    const key = issue(harness, 'rich', { limits: [], budget: { microUsd: 10_000_000, period: 'month' } });
    const request = harness.request(key, reasoning);
    const admitted = await admit(request, harness.test.tollgate.pipeline);
    expect(forwardedBody(DIALECTS[admitted.endpoint], admitted, admitted.facts.model)).toBe(request.bytes);
    expect(admitted.admission.headers['x-tollgate-output-capped']).toBeUndefined();
    expect(harness.row(request.requestId)!.est_cost_micros).toBeGreaterThan(request.estimate.reservedMicroUsd * 20);
  });

  it('refuses with insufficient_quota when less than the useful minimum is left, and takes nothing', async () => {
    harness = startHarness({ limiterClock: () => 0 });
    const key = issue(harness, 'poor', { limits: [parseLimit('requests:10/min')], budget: { microUsd: 4_000, period: 'day' } });
    const request = harness.request(key, reasoning); // 1,024 o4-mini tokens cost 4,506 µUSD
    const error = await refusal(admit(request, harness.test.tollgate.pipeline));
    expect(error.code).toBe('insufficient_quota');
    expect(remaining(request)).toEqual([10]);
    harness.test.ledger.flush();
    expect(harness.row(request.requestId)).toMatchObject({ status: 'rejected' });
  });

  it('holds the client’s own cost cap without any budget, and refuses a cap too small for the prompt and the minimum', async () => {
    harness = startHarness();
    const key = issue(harness, 'careful', { limits: [] });
    const admitted = await admit(harness.request(key, reasoning, { maxCostMicroUsd: 10_000 }), harness.test.tollgate.pipeline);
    expect(sentBody(admitted).max_completion_tokens).toBeLessThan(2_273);
    expect(harness.row(admitted.requestId)!.est_cost_micros).toBeLessThanOrEqual(10_000);
    const error = await refusal(admit(harness.request(key, reasoning, { maxCostMicroUsd: 1_000 }), harness.test.tollgate.pipeline));
    expect(error.code).toBe('invalid_value');
    expect(error.param).toBe('x-tollgate-max-cost-usd');
  });

  it('keeps the client’s own smaller limit', async () => {
    harness = startHarness();
    const key = issue(harness, 'modest', { limits: [], budget: { microUsd: 50_000, period: 'day' } });
    const admitted = await admit(harness.request(key, { model: 'o4-mini', max_tokens: undefined, max_completion_tokens: 500 }), harness.test.tollgate.pipeline);
    expect(sentBody(admitted).max_completion_tokens).toBe(500);
    expect(admitted.admission.headers['x-tollgate-output-capped']).toBeUndefined();
  });
});

describe('forward', () => {
  it('sends nothing and bills nothing for a client that left while its request was admitted', async () => {
    harness = startHarness();
    const key = issue(harness, 'impatient', { limits: [] });
    const admitted = await admit(harness.request(key), harness.test.tollgate.pipeline);
    admitted.client.left.leave();
    const error = await refusal(forward(admitted, harness.test.tollgate.pipeline));
    expect(error.code).toBe('client_closed_request');
    harness.test.ledger.flush();
    // Not an upstream failure (the harness's upstream refuses connections): it never tried.
    expect(harness.row(admitted.requestId)).toMatchObject({ status: 'client_aborted', cost_micros: 0, prompt_tokens: 0 });
  });
});
