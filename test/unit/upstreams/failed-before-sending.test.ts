/**
 * failedBeforeSending() decides whether a failed upstream request may be billed: one that never
 * left costs nothing, one that was sent and then lost is settled at its reservation
 * (src/pipeline/settle.ts, rule 4).
 */
import { errors as undiciErrors } from 'undici';
import { describe, expect, it } from 'vitest';
import { TollgateError } from '../../../src/domain/errors.js';
import { SLOT_WAIT_CODE } from '../../../src/upstreams/fair-slots.js';
import { failedBeforeSending, toUpstreamError } from '../../../src/upstreams/pool.js';

const networkError = (code: string): Error => Object.assign(new Error(code), { code });

describe('failedBeforeSending', () => {
  it('is true when nothing reached the upstream: refused, unresolvable, no connection in time, or refused by Tollgate itself', () => {
    expect(failedBeforeSending(toUpstreamError(networkError('ECONNREFUSED')))).toBe(true);
    expect(failedBeforeSending(toUpstreamError(networkError('ENOTFOUND')))).toBe(true);
    expect(failedBeforeSending(toUpstreamError(new undiciErrors.ConnectTimeoutError()))).toBe(true);
    expect(failedBeforeSending(toUpstreamError(networkError(SLOT_WAIT_CODE)))).toBe(true);
    expect(failedBeforeSending(new TollgateError('upstream_unreachable', 'No Anthropic upstream is configured for /v1/messages.'))).toBe(true);
  });

  it('is false once the request may have reached the upstream: a reset, or no answer in time', () => {
    expect(failedBeforeSending(toUpstreamError(networkError('ECONNRESET')))).toBe(false);
    expect(failedBeforeSending(toUpstreamError(new undiciErrors.HeadersTimeoutError()))).toBe(false);
    expect(failedBeforeSending(toUpstreamError(new undiciErrors.BodyTimeoutError()))).toBe(false);
  });
});
