/** The output plan of a bounded request: never more than may be spent, the most that fits, refused only below the useful minimum. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { planOutput, reservationOf, usefulMinimum } from '../../../src/budgets/output-cap.js';
import { builtinPriceTable, estimateRequestSync } from '../../../src/estimate/index.js';
import type { Endpoint } from '../../../src/endpoints.js';
import { DIALECTS } from '../../../src/dialects/index.js';
import { forwardedBody } from '../../../src/dialects/request-edits.js';
import { readClientBody } from '../../../src/estimate/client-body.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 4096 };
const chat = (body: Record<string, unknown>) =>
  estimateRequestSync('chat', { model: 'o4-mini', messages: [{ role: 'user', content: 'Think hard about foxes.' }], ...body }, options);

describe('the worst case of a request', () => {
  it('is the model’s real output limit for a reasoning model without max_tokens, not the default reservation', () => {
    const estimate = chat({});
    expect(estimate.completionTokensReserved).toBe(4096);
    expect(estimate.completionBoundPerChoice).toBe(100_000);
    expect(reservationOf(estimate, estimate.completionBoundPerChoice)).toBeGreaterThan(estimate.reservedMicroUsd * 20);
  });

  it('is the client’s own limit when it set one, times n', () => {
    const estimate = chat({ max_completion_tokens: 300, n: 3 });
    expect(estimate.completionBoundPerChoice).toBe(300);
    expect(estimate.choices).toBe(3);
    expect(planOutput(estimate, Number.MAX_SAFE_INTEGER, 1024)).toMatchObject({ perChoice: 300, completionTokens: 900, capped: false });
  });

  it('assumes the configured bound for a model with no known output limit', () => {
    const estimate = estimateRequestSync('chat', { model: 'my-own-model', messages: [] }, { ...options, fallbackMaxOutputTokens: 50_000 });
    expect(estimate.completionBoundPerChoice).toBe(50_000);
  });
});

describe('planOutput', () => {
  it('caps a request a $0.05 budget cannot hold whole at what it can pay for', () => {
    const estimate = chat({});
    const plan = planOutput(estimate, 50_000, 1024)!;
    expect(plan.capped).toBe(true);
    expect(plan.microUsd).toBeLessThanOrEqual(50_000);
    // o4-mini output is $4.40 / 1M: a little under 11,364 tokens fit after the prompt.
    expect(plan.perChoice).toBeGreaterThan(11_300);
    expect(plan.perChoice).toBeLessThan(11_364);
    expect(reservationOf(estimate, plan.perChoice + 1)).toBeGreaterThan(50_000);
  });

  it('refuses when less than the useful minimum fits, and the client’s smaller limit is the minimum', () => {
    expect(planOutput(chat({}), reservationOf(chat({}), 1023), 1024)).toBeUndefined();
    const small = chat({ max_completion_tokens: 100 });
    expect(usefulMinimum(small, 1024)).toBe(100);
    expect(planOutput(small, reservationOf(small, 100), 1024)).toMatchObject({ perChoice: 100, capped: false });
    expect(planOutput(small, reservationOf(small, 100) - 1, 1024)).toBeUndefined();
  });

  it('never plans more than may be spent, and always the most that fits (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2_000_000 }),
        fc.integer({ min: 1, max: 4 }),
        fc.option(fc.integer({ min: 1, max: 60_000 }), { nil: undefined }),
        fc.integer({ min: 1, max: 5000 }),
        fc.constantFrom('o4-mini', 'gpt-4o', 'gpt-5', 'gpt-4o-mini', 'unknown-model'),
        (affordable, n, max, minimum, model) => {
          const estimate = estimateRequestSync(
            'chat',
            { model, n, messages: [{ role: 'user', content: 'hello there' }], ...(max === undefined ? {} : { max_completion_tokens: max }) },
            options,
          );
          const plan = planOutput(estimate, affordable, minimum);
          const least = usefulMinimum(estimate, minimum);
          if (plan === undefined) {
            expect(reservationOf(estimate, least)).toBeGreaterThan(affordable);
            return;
          }
          expect(plan.microUsd).toBeLessThanOrEqual(affordable);
          expect(plan.microUsd).toBe(reservationOf(estimate, plan.perChoice));
          expect(plan.perChoice).toBeGreaterThanOrEqual(least);
          expect(plan.perChoice).toBeLessThanOrEqual(estimate.completionBoundPerChoice);
          expect(plan.completionTokens).toBe(plan.perChoice * n);
          if (plan.capped) {
            expect(plan.perChoice).toBeLessThan(estimate.completionBoundPerChoice);
            expect(reservationOf(estimate, plan.perChoice + 1)).toBeGreaterThan(affordable);
          } else {
            expect(plan.perChoice).toBe(estimate.completionBoundPerChoice);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** The body a capped request forwards: the client's with the cap spliced in. */
function capped(endpoint: Endpoint, body: Record<string, unknown>, tokens: number): Record<string, unknown> {
  const bytes = Buffer.from(JSON.stringify(body));
  const read = readClientBody(endpoint, bytes);
  const dialect = DIALECTS[endpoint];
  const sent = forwardedBody(dialect, { endpoint, bytes, ...read, body: read.fields, edits: dialect.outputLimitEdits(read.fields, tokens) }, read.facts.model);
  return JSON.parse(sent.toString()) as Record<string, unknown>;
}

describe('outputLimitEdits', () => {
  it('sets the field each endpoint limits its output with, keeping a chat client’s older max_tokens', () => {
    expect(capped('chat', { model: 'o4-mini' }, 900)).toEqual({ model: 'o4-mini', max_completion_tokens: 900 });
    expect(capped('chat', { model: 'gpt-4o', max_tokens: 5000 }, 900)).toEqual({ model: 'gpt-4o', max_tokens: 900 });
    expect(capped('responses', { model: 'o4-mini', input: 'hi' }, 900)).toEqual({ model: 'o4-mini', input: 'hi', max_output_tokens: 900 });
    expect(capped('completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'hi' }, 900)).toMatchObject({ max_tokens: 900 });
    expect(capped('messages', { model: 'claude-sonnet-4-5', max_tokens: 64_000, messages: [] }, 900)).toMatchObject({ max_tokens: 900 });
  });

  it('leaves a capped chat request exactly one output limit, set to the cap', () => {
    expect(capped('chat', { model: 'x', max_tokens: 5, max_completion_tokens: 5000 }, 900)).toEqual({ model: 'x', max_completion_tokens: 900 });
    expect(capped('chat', { max_completion_tokens: 5000, model: 'x', max_tokens: null }, 900)).toEqual({ model: 'x', max_completion_tokens: 900 });
    expect(capped('chat', { max_tokens: 7, model: 'x', max_completion_tokens: null }, 900)).toEqual({ max_tokens: 900, model: 'x' });
  });
});
