/** Upstream errors as the client is told them (src/dialects/upstream-errors.ts). */
import { describe, expect, it } from 'vitest';
import { ANTHROPIC_MESSAGES, CHAT } from '../../../src/dialects/index.js';
import { rewordUpstreamError } from '../../../src/dialects/upstream-errors.js';

const openaiError = (code: string, message: string): Buffer =>
  Buffer.from(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }));

describe('rewordUpstreamError', () => {
  it('rewords a refused provider key without a word of the provider’s', () => {
    for (const status of [401, 403]) {
      const reworded = rewordUpstreamError(
        CHAT,
        status,
        openaiError('invalid_api_key', 'Incorrect API key provided: sk-proj-****abcd (org-Secret1234)'),
        'req_1',
      );
      expect(reworded?.code).toBe('upstream_auth_failed');
      const text = reworded!.body.toString('utf8');
      expect(text).not.toContain('sk-proj');
      expect(text).not.toContain('org-');
      expect(JSON.parse(text)).toMatchObject({ error: { type: 'upstream_error', code: 'upstream_auth_failed', param: null } });
    }
  });

  it('speaks Anthropic’s shape on the Messages route', () => {
    const reworded = rewordUpstreamError(
      ANTHROPIC_MESSAGES,
      401,
      Buffer.from('{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'),
      'req_2',
    );
    expect(JSON.parse(reworded!.body.toString('utf8'))).toMatchObject({ type: 'error', error: { type: 'authentication_error' }, request_id: 'req_2' });
  });

  it('rewords a 404 unknown_url, and leaves any other error as it came', () => {
    expect(rewordUpstreamError(CHAT, 404, openaiError('unknown_url', 'Invalid URL (POST /chat/completions)'), 'r')?.code).toBe('upstream_path_not_found');
    expect(rewordUpstreamError(CHAT, 404, openaiError('model_not_found', 'The model does not exist.'), 'r')).toBeUndefined();
    expect(rewordUpstreamError(CHAT, 429, openaiError('rate_limit_exceeded', 'slow down'), 'r')).toBeUndefined();
    expect(rewordUpstreamError(CHAT, 500, Buffer.from('not json'), 'r')).toBeUndefined();
  });
});
