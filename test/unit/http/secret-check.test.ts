/**
 * Every surface that checks a secret a client presents — the dashboard's
 * login form (the admin token and tenants' dashboard tokens), the admin API's
 * bearer token, the /metrics token — goes through one per-address throttle,
 * in-process with a fixed clock: after a burst of wrong tokens an address is
 * answered 429 with Retry-After of a second and nothing it sends is compared
 * (not even the right token: no oracle), and a second later the right token
 * works again. Nobody is locked out for minutes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMetricsApp } from '../../../src/app.js';
import type { AppEnv } from '../../../src/app-env.js';
import { sqliteDashboardTokens } from '../../../src/storage/sqlite/tenant-tokens.js';
import { Metrics } from '../../../src/metrics.js';
import { createUpstream } from '../../../src/upstreams/pool.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { captureLogs } from '../../support/logs.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
const ADMIN = 'secret-check-admin-token-0123456789';
const METRICS = 'secret-check-metrics-token-0123456789';
const BALANCER = '10.0.0.2';
let open: TestApp[] = [];

afterEach(() => {
  for (const built of open) built.close();
  open = [];
});

interface Harness {
  readonly test: TestApp;
  readonly clock: { now: number };
  /** A request from `address` (through the trusted balancer when `viaBalancer`). */
  send(path: string, init: RequestInit, address: string, viaBalancer?: boolean): Promise<Response>;
  login(token: string, address: string): Promise<Response>;
  admin(token: string, address: string, path?: string): Promise<Response>;
  metrics(token: string, address: string): Promise<Response>;
}

function harness(): Harness {
  const clock = { now: NOW };
  const test = buildTestApp({
    upstream: createUpstream({
      url: 'http://127.0.0.1:9/v1',
      apiKey: 'sk-unused',
      connectTimeoutMs: 100,
      headersTimeoutMs: 100,
      idleTimeoutMs: 100,
      connections: 1,
    }),
    logger: captureLogs('silent').logger,
    adminToken: ADMIN,
    now: () => clock.now,
    env: { TOLLGATE_METRICS_TOKEN: METRICS, TOLLGATE_TRUSTED_PROXIES: BALANCER },
  });
  open.push(test);
  const send = async (path: string, init: RequestInit, address: string, viaBalancer = false) => {
    const headers = new Headers(init.headers);
    if (viaBalancer) headers.set('x-forwarded-for', address);
    const socket = { remoteAddress: viaBalancer ? `::ffff:${BALANCER}` : address };
    return test.app.request(path, { ...init, headers }, { incoming: { socket } } as unknown as AppEnv['Bindings']);
  };
  return {
    test,
    clock,
    send,
    login: (token, address) =>
      send(
        '/dashboard/login',
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token, next: '/dashboard' }).toString(),
        },
        address,
      ),
    admin: (token, address, path = '/admin/api/keys') => send(path, { headers: { authorization: `Bearer ${token}` } }, address),
    metrics: (token, address) => send('/metrics', { headers: { authorization: `Bearer ${token}` } }, address),
  };
}

const wrong = (i: number) => `wrong-token-${i}-0123456789abcdef`;

async function expectOpenAIThrottled(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe('1');
  const body = (await response.json()) as { error: { code: string; type: string; message: string; param: null } };
  expect(body.error).toMatchObject({ code: 'too_many_attempts', type: 'rate_limit_error', param: null });
  expect(body.error.message).toContain('try again in 1 second');
}

describe('the dashboard login form', () => {
  it('refuses an address after ten wrong admin tokens, compares nothing it sends for a second, then lets the right token in', async () => {
    const h = harness();
    for (let i = 0; i < 10; i += 1) expect((await h.login(wrong(i), '203.0.113.9')).status).toBe(401);
    const blocked = await h.login(wrong(10), '203.0.113.9');
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('retry-after')).toBe('1');
    expect(await blocked.text()).toContain('Too many wrong tokens from your address. Try again in 1 second.');
    // Not compared while throttled: the right token gets the same answer, so a guess learns nothing.
    const right = await h.login(ADMIN, '203.0.113.9');
    expect(right.status).toBe(429);
    expect(right.headers.get('set-cookie')).toBeNull();
    // Another address is not slowed.
    expect((await h.login(ADMIN, '198.51.100.7')).status).toBe(303);
    h.clock.now += 1000;
    const operator = await h.login(ADMIN, '203.0.113.9');
    expect(operator.status).toBe(303);
    expect(operator.headers.get('set-cookie')).toMatch(/tollgate_session=v1\./);
  });

  it("locks a tenant's right dashboard token out for a second after ten wrong ones from its shared address, not ten minutes", async () => {
    const h = harness();
    h.test.store.createTenant('acme');
    const issued = await sqliteDashboardTokens(h.test.db.database).create({ tenant: 'acme' }, NOW);
    const office = '192.0.2.44';
    for (let i = 0; i < 10; i += 1) {
      const guess = await h.login(`tgd-${'x'.repeat(40)}${String(i).padStart(3, '0')}`, office);
      expect(guess.status).toBe(401);
      expect(await guess.text()).toContain('That dashboard token is unknown, revoked or expired');
    }
    expect((await h.login(issued.token, office)).status).toBe(429);
    h.clock.now += 1000;
    const tenant = await h.login(issued.token, office);
    expect(tenant.status).toBe(303);
    expect(tenant.headers.get('set-cookie')).toMatch(/tollgate_session=t1\./);
  });

  it('does not slow an operator who is already logged in: a session cookie is not a guess', async () => {
    const h = harness();
    const cookie = (await h.login(ADMIN, '203.0.113.9')).headers.get('set-cookie')!.split(';')[0]!;
    for (let i = 0; i < 20; i += 1) await h.login(wrong(i), '203.0.113.9');
    expect((await h.send('/dashboard', { headers: { cookie } }, '203.0.113.9')).status).toBe(200);
    expect((await h.send('/admin/api/dashboard/overview', { headers: { cookie } }, '203.0.113.9')).status).toBe(200);
  });

  it('counts wrong tokens per client behind a trusted proxy, not per proxy', async () => {
    const h = harness();
    const attempt = async (forwardedFor: string, token = wrong(0)) =>
      (
        await h.send(
          '/dashboard/login',
          { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }).toString() },
          forwardedFor,
          true,
        )
      ).status;
    // A tenant's guesses (with a forged left part) brake the tenant only.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i += 1) statuses.push(await attempt(`${i}.${i}.${i}.${i}, 203.0.113.9`));
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429]);
    expect(await attempt('198.51.100.7', ADMIN)).toBe(303);
  });
});

describe('the admin API bearer token', () => {
  it('is refused with 429 in OpenAI’s shape after ten wrong ones from an address, even when right, and works a second later', async () => {
    const h = harness();
    for (let i = 0; i < 10; i += 1) {
      const guess = await h.admin(wrong(i), '203.0.113.9');
      expect(guess.status).toBe(401);
      expect(((await guess.json()) as { error: { code: string } }).error.code).toBe('invalid_admin_token');
    }
    await expectOpenAIThrottled(await h.admin(wrong(10), '203.0.113.9'));
    await expectOpenAIThrottled(await h.admin(ADMIN, '203.0.113.9'));
    // The dashboard's JSON, behind the same token, is throttled as well.
    await expectOpenAIThrottled(await h.admin(ADMIN, '203.0.113.9', '/admin/api/dashboard/overview'));
    expect((await h.admin(ADMIN, '198.51.100.7')).status).toBe(200);
    h.clock.now += 1000;
    expect((await h.admin(ADMIN, '203.0.113.9')).status).toBe(200);
    expect((await h.admin(ADMIN, '203.0.113.9', '/admin/api/dashboard/overview')).status).toBe(200);
  });

  it('never slows the right token by its own use', async () => {
    const h = harness();
    for (let i = 0; i < 100; i += 1) expect((await h.admin(ADMIN, '203.0.113.9')).status).toBe(200);
  });

  it('lets sustained guessing compare about one token a second', async () => {
    const h = harness();
    let compared = 0;
    // Twenty seconds of fifty guesses a second.
    for (let i = 0; i < 1000; i += 1) {
      const status = (await h.admin(wrong(i), '203.0.113.9')).status;
      if (status === 401) compared += 1;
      else expect(status).toBe(429);
      h.clock.now += 20;
    }
    expect(compared).toBeGreaterThanOrEqual(29);
    expect(compared).toBeLessThanOrEqual(10 + 20);
  });
});

describe('the /metrics token', () => {
  it('is refused with 429 after ten wrong ones from an address, even when right, and works a second later', async () => {
    const h = harness();
    for (let i = 0; i < 10; i += 1) expect((await h.metrics(wrong(i), '203.0.113.9')).status).toBe(401);
    await expectOpenAIThrottled(await h.metrics(METRICS, '203.0.113.9'));
    h.clock.now += 1000;
    expect((await h.metrics(METRICS, '203.0.113.9')).status).toBe(200);
  });

  it('on its own port shares the throttle, so guesses there count on the proxy too', async () => {
    const h = harness();
    const own = createMetricsApp(new Metrics({ defaultMetrics: false }), { queueDepth: 0 }, METRICS, {
      throttle: h.test.tollgate.secretThrottle,
      trustedProxies: new Set(),
      now: () => h.clock.now,
    });
    const from = { incoming: { socket: { remoteAddress: '203.0.113.9' } } } as unknown as AppEnv['Bindings'];
    for (let i = 0; i < 10; i += 1) expect((await own.request('/metrics', { headers: { authorization: `Bearer ${wrong(i)}` } }, from)).status).toBe(401);
    await expectOpenAIThrottled(await own.request('/metrics', { headers: { authorization: `Bearer ${METRICS}` } }, from));
    await expectOpenAIThrottled(await h.admin(ADMIN, '203.0.113.9'));
  });
});

describe('one throttle for every surface', () => {
  it('counts guesses on any surface against the address on all of them', async () => {
    const h = harness();
    for (let i = 0; i < 4; i += 1) await h.metrics(wrong(i), '203.0.113.9');
    for (let i = 0; i < 3; i += 1) await h.admin(wrong(i), '203.0.113.9');
    for (let i = 0; i < 3; i += 1) await h.login(wrong(i), '203.0.113.9');
    expect((await h.login(ADMIN, '203.0.113.9')).status).toBe(429);
    await expectOpenAIThrottled(await h.admin(ADMIN, '203.0.113.9'));
    await expectOpenAIThrottled(await h.metrics(METRICS, '203.0.113.9'));
  });
});
