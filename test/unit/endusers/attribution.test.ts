/** Reading a request's end user and tags: which source wins, and what is refused (pure). */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeTags, encodeTags } from '../../../src/domain/rollup-names.js';
import { MAX_END_USER_CHARS, MAX_TAGS, readAttribution } from '../../../src/endusers/attribution.js';
import { TollgateError } from '../../../src/domain/errors.js';
import { parseTagBudget, endUserPolicyFrom, tagBudgetsFrom } from '../../../src/domain/policy-options.js';
import { PolicyError, validatePolicy } from '../../../src/domain/policy.js';

function refusal(run: () => unknown): TollgateError {
  try {
    run();
  } catch (error) {
    if (error instanceof TollgateError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('readAttribution', () => {
  it('takes the header over the body user, and the body user over safety_identifier', () => {
    expect(readAttribution({ user: 'body', safety_identifier: 'safe' }, { 'x-tollgate-user': 'header' }).endUser).toBe('header');
    expect(readAttribution({ user: 'body', safety_identifier: 'safe' }, {}).endUser).toBe('body');
    expect(readAttribution({ safety_identifier: 'safe' }, {}).endUser).toBe('safe');
    expect(readAttribution({ user: '', safety_identifier: 'safe' }, {}).endUser).toBe('safe');
    expect(readAttribution({ user: null }, {}).endUser).toBeUndefined();
  });

  it('takes tags from the header over metadata.tags, trimmed and without duplicates', () => {
    expect(readAttribution({ metadata: { tags: 'x' } }, { 'x-tollgate-tags': ' a ,b,,a ' }).tags).toEqual(['a', 'b']);
    expect(readAttribution({ metadata: { tags: 'x,y' } }, {}).tags).toEqual(['x', 'y']);
    expect(readAttribution({ metadata: { other: 'x' } }, {}).tags).toEqual([]);
  });

  it('refuses a header sent twice, naming it', () => {
    expect(refusal(() => readAttribution({}, { 'x-tollgate-user': ['a', 'b'] })).param).toBe('x-tollgate-user');
  });

  it('accepts exactly the users of the documented alphabet and length (property)', () => {
    const allowed = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$/);
    fc.assert(
      fc.property(allowed, (user) => {
        expect(readAttribution({ user }, {}).endUser).toBe(user);
      }),
    );
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 200 }), (user) => {
        const ok = /^[A-Za-z0-9][A-Za-z0-9._:/@+=-]*$/.test(user) && user.length <= MAX_END_USER_CHARS;
        let accepted = true;
        try {
          readAttribution({}, { 'x-tollgate-user': user });
        } catch (error) {
          expect(error).toBeInstanceOf(TollgateError);
          expect((error as TollgateError).status).toBe(400);
          accepted = false;
        }
        // The header is trimmed first.
        if (user === user.trim()) expect(accepted).toBe(ok);
      }),
    );
  });

  it('records any body user OpenAI would take: odd or long ones as a bounded, stable, distinct digest (property)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 400 }), fc.string({ minLength: 1, maxLength: 400 }), (a, b) => {
        const first = readAttribution({ user: a }, {}).endUser!;
        expect(first.length).toBeLessThanOrEqual(MAX_END_USER_CHARS);
        expect(first).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:/@+=-]*$/);
        expect(readAttribution({ user: a }, {}).endUser).toBe(first);
        if (a !== b) expect(readAttribution({ user: b }, {}).endUser).not.toBe(first);
      }),
    );
    expect(readAttribution({ user: 'alice smith' }, {}).endUser).toMatch(/^sha256:[0-9a-f]{32}$/);
    expect(readAttribution({ safety_identifier: 'u'.repeat(129) }, {}).endUser).toMatch(/^sha256:[0-9a-f]{32}$/);
  });

  it('never returns more than the maximum number of tags, and round-trips them through the ledger column (property)', () => {
    const tag = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,63}$/);
    fc.assert(
      fc.property(fc.array(tag, { maxLength: 15 }), (tags) => {
        const distinct = [...new Set(tags)];
        if (distinct.length > MAX_TAGS) {
          expect(refusal(() => readAttribution({}, { 'x-tollgate-tags': tags.join(',') })).param).toBe('x-tollgate-tags');
          return;
        }
        const read = readAttribution({}, { 'x-tollgate-tags': tags.join(',') }).tags;
        expect(read).toEqual(distinct);
        expect(decodeTags(encodeTags(read))).toEqual(read);
      }),
    );
  });
});

describe('the command line’s per-user and per-tag options', () => {
  it('builds the end-user policy, keeping what an update does not name', () => {
    const created = endUserPolicyFrom({ userRpm: '10', userBudgetUsd: '0.5', userBudgetPeriod: 'day' });
    expect(created).toEqual({
      limits: [{ name: 'requests-per-min', unit: 'requests', amount: 10, period: 'min', burst: 10 }],
      budgets: [{ microUsd: 500_000, period: 'day' }],
    });
    expect(endUserPolicyFrom({ userBudgetUsd: '2' }, created!)).toEqual({ limits: created!.limits, budgets: [{ microUsd: 2_000_000, period: 'day' }] });
    expect(endUserPolicyFrom({}, created!)).toBeUndefined();
    expect(endUserPolicyFrom({ userPolicy: false }, created!)).toBeNull();
    expect(() => endUserPolicyFrom({ userPolicy: false, userRpm: '1' })).toThrow(PolicyError);
  });

  it('parses --tag-budget TAG=DOLLARS/PERIOD and refuses malformed ones', () => {
    expect(parseTagBudget('search=5/day')).toEqual({ tag: 'search', microUsd: 5_000_000, period: 'day' });
    expect(tagBudgetsFrom({ tagBudget: ['a=1/month', 'b=0.25/week'] })).toHaveLength(2);
    expect(tagBudgetsFrom({ tagBudgets: false })).toBeNull();
    for (const bad of ['search', 'search=5', 'sea rch=5/day', 'search=5/year', 'search=0/day', 'search=abc/day']) {
      expect(() => parseTagBudget(bad), bad).toThrow(PolicyError);
    }
  });

  it('refuses two end-user budgets in one period, and two tag budgets of one tag in one period', () => {
    expect(() =>
      validatePolicy({
        limits: [],
        endUser: {
          limits: [],
          budgets: [
            { microUsd: 1, period: 'day' },
            { microUsd: 2, period: 'day' },
          ],
        },
      }),
    ).toThrow(/end-user budgets per day/);
    expect(() =>
      validatePolicy({
        limits: [],
        tagBudgets: [
          { tag: 'a', microUsd: 1, period: 'day' },
          { tag: 'a', microUsd: 2, period: 'day' },
        ],
      }),
    ).toThrow(/tag "a" budgets per day/);
  });
});
