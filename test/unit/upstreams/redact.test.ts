/** Provider account identifiers in upstream error bodies are masked before tenants see them. */
import { describe, expect, it } from 'vitest';
import { redactProviderAccount } from '../../../src/upstreams/redact.js';

describe('redactProviderAccount', () => {
  it('masks organization, project, user and key identifiers and keeps the rest of the message', () => {
    const body = JSON.stringify({
      error: {
        message:
          'Rate limit reached for gpt-4o in organization org-AbC123xyz on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Project proj_9fK2mQ. User user-77Hh1. Incorrect API key provided: sk-proj-****abcd.',
        type: 'tokens',
        code: 'rate_limit_exceeded',
      },
    });
    const out = redactProviderAccount(Buffer.from(body)).toString('utf8');
    expect(out).not.toMatch(/AbC123xyz|9fK2mQ|77Hh1|abcd/);
    expect(out).toContain('in organization org-*** on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000');
    expect(JSON.parse(out)).toMatchObject({ error: { code: 'rate_limit_exceeded', type: 'tokens' } });
  });

  it('returns the very same buffer when there is nothing to mask', () => {
    const body = Buffer.from('{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}');
    expect(redactProviderAccount(body)).toBe(body);
  });
});
