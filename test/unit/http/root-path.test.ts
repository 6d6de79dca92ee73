/** The bare address (`GET /`): a browser is sent to the dashboard, an API client is told where things are. */
import { afterAll, describe, expect, it } from 'vitest';
import { createUpstream } from '../../../src/upstreams/pool.js';
import { buildTestApp } from '../../support/app.js';
import { captureLogs } from '../../support/logs.js';

const logs = captureLogs('warn');
// Never called: nothing here reaches an upstream.
const upstream = createUpstream({
  url: 'http://127.0.0.1:9/v1',
  apiKey: 'unused',
  connectTimeoutMs: 100,
  headersTimeoutMs: 100,
  idleTimeoutMs: 100,
  connections: 1,
});
const test = buildTestApp({ upstream, logger: logs.logger });

afterAll(async () => {
  test.close();
  await upstream.close();
});

describe('GET /', () => {
  it('redirects a browser to the dashboard', async () => {
    const response = await test.app.request('http://tollgate.test/', { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/dashboard');
  });

  it('tells an API client where the dashboard and the API are', async () => {
    const response = await test.app.request('http://tollgate.test/', { headers: { accept: 'application/json' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(/./);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ service: 'tollgate', dashboard: '/dashboard', api: '/v1', health: '/healthz' });
    expect(body.message).toContain('/dashboard');
  });

  it('answers curl, which sends no Accept header, the same way', async () => {
    const response = await test.app.request('http://tollgate.test/');
    expect(response.status).toBe(200);
    expect(((await response.json()) as { dashboard: string }).dashboard).toBe('/dashboard');
  });
});
