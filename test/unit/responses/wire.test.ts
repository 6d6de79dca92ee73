/** The Responses lifecycle's wire helpers: ids, terminal statuses, forwarded query parameters, the 404. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { renderError } from '../../../src/domain/errors.js';
import { forwardedQuery, isTerminal, responseIdOfJson, responseNotFound } from '../../../src/responses/wire.js';

describe('responseIdOfJson', () => {
  it("reads the id OpenAI writes first from the answer's first bytes", () => {
    expect(responseIdOfJson(Buffer.from('{"id":"resp_abc","object":"response","status":"queued"}'))).toBe('resp_abc');
    expect(responseIdOfJson(Buffer.from('{\n  "id": "resp_abc",\n  "object": "response"\n}'))).toBe('resp_abc');
  });

  it('parses the whole answer when the id is not first', () => {
    expect(responseIdOfJson(Buffer.from('{"object":"response","id":"resp_late"}'))).toBe('resp_late');
  });

  it('is undefined for answers without an id', () => {
    expect(responseIdOfJson(Buffer.from('{"object":"response"}'))).toBeUndefined();
    expect(responseIdOfJson(Buffer.from('not json'))).toBeUndefined();
    expect(responseIdOfJson(Buffer.from('{"id":""}'))).toBeUndefined();
    expect(responseIdOfJson(Buffer.from('[]'))).toBeUndefined();
  });

  it('agrees with JSON.parse for any object that has a string id', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 50 }), fc.dictionary(fc.string(), fc.jsonValue()), fc.boolean(), (id, rest, first) => {
        const { id: _dropped, ...others } = rest as Record<string, unknown>;
        void _dropped;
        const object = first ? { id, ...others } : { ...others, id };
        expect(responseIdOfJson(Buffer.from(JSON.stringify(object)))).toBe(id);
      }),
    );
  });
});

describe('isTerminal', () => {
  it('knows which statuses end a response', () => {
    for (const status of ['completed', 'failed', 'cancelled', 'incomplete']) expect(isTerminal(status)).toBe(true);
    for (const status of ['queued', 'in_progress', undefined, null, 1, 'done']) expect(isTerminal(status)).toBe(false);
  });
});

describe('forwardedQuery', () => {
  const base = 'http://proxy/v1/responses/resp_1';
  it('keeps the parameters the API defines for each call, in order, and drops the rest', () => {
    expect(forwardedQuery('input_items', `${base}/input_items?limit=5&order=asc&after=msg_1&include[]=x&api_key=leak`)).toBe(
      '?limit=5&order=asc&after=msg_1&include%5B%5D=x',
    );
    expect(forwardedQuery('retrieve', `${base}?include=a&include=b&starting_after=3&limit=9`)).toBe('?include=a&include=b&starting_after=3');
    expect(forwardedQuery('cancel', `${base}/cancel?anything=1`)).toBe('');
    expect(forwardedQuery('delete', base)).toBe('');
  });
});

describe('responseNotFound', () => {
  it("is the API's own 404", () => {
    expect(renderError(responseNotFound('resp_x'))).toEqual({
      status: 404,
      body: { error: { message: "Response with id 'resp_x' not found.", type: 'invalid_request_error', param: null, code: 'response_not_found' } },
    });
  });
});
