import { describe, expect, it } from 'vitest';
import { ANTHROPIC_MESSAGES, CHAT } from '../../../src/dialects/index.js';
import type { PipelineDeps } from '../../../src/pipeline/deps.js';
import { dialectRoutes } from '../../../src/pipeline/routes.js';
import { captureLogs } from '../../support/logs.js';

/** Only what a route answers before authentication reads (no Anthropic upstream configured). */
const deps = { anthropic: undefined } as unknown as PipelineDeps;

describe('the route factory', () => {
  it("refuses a dialect's requests in its own error shape when no upstream of its kind is configured", async () => {
    const routes = dialectRoutes(ANTHROPIC_MESSAGES, deps, captureLogs().logger);
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const response = await routes.request(path, { method: 'POST', body: '{}' });
      expect(response.status).toBe(502);
      expect(response.headers.get('x-tollgate-error-code')).toBe('upstream_unreachable');
      expect(await response.json()).toMatchObject({
        type: 'error',
        error: { type: 'api_error', message: 'No Anthropic upstream is configured for /v1/messages.' },
      });
    }
  });

  it("answers another method on a dialect's paths with a 405 in its own shape", async () => {
    const routes = dialectRoutes(ANTHROPIC_MESSAGES, { anthropic: {} } as unknown as PipelineDeps, captureLogs().logger);
    const response = await routes.request('/v1/messages/count_tokens', { method: 'GET' });
    expect(response.status).toBe(405);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('leaves the errors of an OpenAI dialect to the app (one renderer)', async () => {
    const routes = dialectRoutes(CHAT, deps, captureLogs().logger);
    expect((await routes.request('/v1/chat/completions', { method: 'GET' })).status).toBe(404);
  });
});
