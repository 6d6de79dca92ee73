/**
 * What shipping a ledger row moves in PostgreSQL's rollups: whatever order
 * and however often a row's states arrive, the rollups end at the row's
 * whole contribution, counted once.
 */
import { expect, it } from 'vitest';
import fc from 'fast-check';
import { countsDelta, countsOf, rejectionReason, transition, type LedgerState } from '../../../src/storage/row-counts.js';

const pendingState: LedgerState = {
  status: 'pending',
  created_at: 1,
  est_prompt_tokens: 100,
  est_completion_tokens: 1000,
  est_cost_micros: 615,
  prompt_tokens: null,
  cached_tokens: null,
  completion_tokens: null,
  reasoning_tokens: null,
  cost_micros: null,
  error_code: null,
};

const settledState = fc.record({
  status: fc.constantFrom('ok', 'upstream_error', 'client_aborted', 'upstream_interrupted', 'upstream_timeout'),
  prompt_tokens: fc.nat(10_000),
  cached_tokens: fc.nat(1000),
  completion_tokens: fc.nat(10_000),
  reasoning_tokens: fc.nat(1000),
  cost_micros: fc.nat(1_000_000),
});

it('files refusals under the reason their error code stands for', () => {
  expect(rejectionReason('rate_limit_exceeded')).toBe('rate_limit');
  expect(rejectionReason('insufficient_quota')).toBe('budget');
  expect(rejectionReason('exceeds_limit_burst')).toBe('other');
  expect(countsOf({ ...pendingState, status: 'rejected', error_code: 'insufficient_quota' })).toMatchObject({ requests: 0, rejectedBudget: 1, costMicros: 0 });
  expect(countsOf({ ...pendingState, status: 'invalid_request', error_code: 'invalid_json' })).toMatchObject({ requests: 0, errors: 1 });
});

it('ends at the final state’s contribution, once, for any order and repetition of shipments', () => {
  fc.assert(
    fc.property(settledState, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), (settled, order) => {
      const final: LedgerState = { ...pendingState, ...settled };
      // true ships the settled state, false the (older) pending one; the settled one ships at least once.
      const shipments = [...order, true].map((settledNow) => (settledNow ? final : pendingState));
      let held: LedgerState | undefined;
      const sum = countsDelta(pendingState, pendingState); // all zero
      for (const next of shipments) {
        const step = transition(held, next);
        if (step === 'none') continue;
        const delta = countsDelta(held, next);
        for (const key of Object.keys(sum) as Array<keyof typeof sum>) sum[key] += delta[key];
        held = next;
      }
      expect(held).toBe(final);
      expect(sum).toEqual(countsOf(final));
    }),
  );
});
