/** Who gets into the dashboard, in-process: login, sessions, logout, the JSON endpoints, and the disabled state. */
import { afterEach, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import type { AppEnv } from '../../../src/app-env.js';
import { createDashboardApiRoutes, createDashboardRoutes, createSessionValue, SESSION_COOKIE, SESSION_TTL_MS } from '../../../src/dashboard/index.js';
import { renderError, TollgateError } from '../../../src/domain/errors.js';
import { ADMIN_TOKEN, buildDashboardApp, type DashboardTestApp } from '../../support/dashboard.js';
import { openDashboardReads } from '../../../src/storage/index.js';

const NOW = Date.parse('2026-11-18T15:00:00Z');
let open: DashboardTestApp[] = [];

function app(adminToken: string | null = ADMIN_TOKEN): DashboardTestApp {
  const built = buildDashboardApp({ adminToken: adminToken ?? undefined, now: NOW });
  open.push(built);
  return built;
}

afterEach(() => {
  for (const built of open) built.close();
  open = [];
});

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

describe('without an admin token', () => {
  it('shows a page saying the dashboard is disabled and how to enable it', async () => {
    const test = app(null);
    for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/login']) {
      const response = await test.request(path);
      expect(response.status).toBe(404);
      const html = await response.text();
      expect(html).toContain('The dashboard is disabled');
      expect(html).toContain('TOLLGATE_ADMIN_TOKEN');
    }
  });

  it('answers the JSON endpoints with admin_disabled', async () => {
    const response = await app(null).request('/admin/api/dashboard/overview');
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('admin_disabled');
  });
});

describe('logging in', () => {
  it('redirects a logged-out visitor to the login page, remembering where they were going', async () => {
    const test = app();
    const response = await test.request('/dashboard/keys?sort=name&page=2');
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(`/dashboard/login?next=${encodeURIComponent('/dashboard/keys?sort=name&page=2')}`);
    const login = await test.request(response.headers.get('location')!);
    expect(login.status).toBe(200);
    const html = await login.text();
    expect(html).toContain('name="token"');
    // One form for both: an operator's admin token and a tenant's read-only dashboard token.
    expect(html).toContain('Admin token or tenant dashboard token');
    expect(html).toContain('dashboard token (tgd-…)');
    expect(html).toContain('value="/dashboard/keys?sort=name&amp;page=2"');
  });

  it('sets an HttpOnly, SameSite=Strict session cookie that holds no token, and goes where the user was headed', async () => {
    const response = await app().request('/dashboard/login', form({ token: ADMIN_TOKEN, next: '/dashboard/keys' }));
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/dashboard/keys');
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(new RegExp(`^${SESSION_COOKIE}=v1\\.`));
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/');
    expect(cookie).not.toContain('Secure');
    expect(cookie).not.toContain(ADMIN_TOKEN);
    expect(decodeURIComponent(cookie)).not.toContain(ADMIN_TOKEN);
    expect(Buffer.from(cookie.split('=')[1]!.split(';')[0]!.replaceAll('.', ''), 'base64url').toString('latin1')).not.toContain(ADMIN_TOKEN);
  });

  it('marks the cookie Secure when the request came over https', async () => {
    const viaProxy = await app().request('/dashboard/login', {
      ...form({ token: ADMIN_TOKEN }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
    });
    expect(viaProxy.headers.get('set-cookie')).toContain('Secure');
    const direct = await app().app.request('https://tollgate.example/dashboard/login', form({ token: ADMIN_TOKEN }));
    expect(direct.headers.get('set-cookie')).toContain('Secure');
  });

  it('refuses a wrong token with a clear message and no cookie', async () => {
    const response = await app().request('/dashboard/login', form({ token: 'not-the-admin-token-at-all', next: '/dashboard' }));
    expect(response.status).toBe(401);
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.text()).toContain('That is not the admin token');
  });

  it('never sends the user to another site after logging in', async () => {
    for (const next of ['https://evil.example/', '//evil.example/x', '/dashboardx', '/admin/api/keys', '/dashboard\\@evil', 'javascript:alert(1)']) {
      const response = await app().request('/dashboard/login', form({ token: ADMIN_TOKEN, next }));
      expect(response.headers.get('location'), next).toBe('/dashboard');
    }
  });
  // Wrong tokens, throttling and lockouts: test/unit/http/secret-check.test.ts.
});

describe('sessions', () => {
  it('open the pages and the JSON endpoints', async () => {
    const test = app();
    const cookie = await test.login();
    for (const path of ['/dashboard', '/dashboard/keys']) expect((await test.request(path, { cookie })).status, path).toBe(200);
    const json = await test.request('/admin/api/dashboard/overview', { cookie });
    expect(json.status).toBe(200);
    expect(((await json.json()) as { page: string }).page).toBe('overview');
  });

  it('are refused once expired, tampered with, or signed with another token', async () => {
    const test = app();
    const cookie = await test.login();
    const value = cookie.split('=')[1]!;
    const [version, expiry, nonce, mac] = value.split('.');
    const refused = async (candidate: string) => {
      const page = await test.request('/dashboard', { cookie: `${SESSION_COOKIE}=${candidate}` });
      expect(page.status, candidate).toBe(303);
      expect(page.headers.get('location')).toBe('/dashboard/login?next=%2Fdashboard');
      expect((await test.request('/admin/api/dashboard/overview', { cookie: `${SESSION_COOKIE}=${candidate}` })).status, candidate).toBe(401);
    };
    await refused(`${version}.${(parseInt(expiry!, 36) + 1000).toString(36)}.${nonce}.${mac}`);
    await refused(`${version}.${expiry}.${nonce}x.${mac}`);
    await refused(`${version}.${expiry}.${nonce}.${mac!.slice(0, -2)}AA`);
    await refused(createSessionValue('some-other-admin-token-0123456789', NOW));
    await refused('');
    await refused('garbage');
    // Still fine just before expiry, refused just after.
    test.clock.now = NOW + SESSION_TTL_MS - 1000;
    expect((await test.request('/dashboard', { cookie })).status).toBe(200);
    test.clock.now = NOW + SESSION_TTL_MS + 1;
    await refused(value);
  });

  it('stop working for everyone when the admin token changes, and work across processes sharing the token', async () => {
    const first = app();
    const cookie = await first.login();
    const otherProcess = new Hono<AppEnv>();
    otherProcess.route(
      '/dashboard',
      createDashboardRoutes({
        database: first.db.database,
        reads: openDashboardReads({ kind: 'sqlite', database: first.db.database }),
        adminToken: ADMIN_TOKEN,
        now: () => NOW,
      }),
    );
    expect((await otherProcess.request('/dashboard', { headers: { cookie } })).status).toBe(200);
    const rotated = new Hono<AppEnv>();
    rotated.route(
      '/dashboard',
      createDashboardRoutes({
        database: first.db.database,
        reads: openDashboardReads({ kind: 'sqlite', database: first.db.database }),
        adminToken: 'a-brand-new-admin-token-9876543210',
        now: () => NOW,
      }),
    );
    expect((await rotated.request('/dashboard', { headers: { cookie } })).status).toBe(303);
  });

  it('end at logout: the cookie is cleared and the login page says so', async () => {
    const test = app();
    const cookie = await test.login();
    const response = await test.request('/dashboard/logout', { method: 'POST', cookie });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/dashboard/login?loggedOut=1');
    expect(response.headers.get('set-cookie')).toMatch(new RegExp(`^${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict`));
    expect(await (await test.request('/dashboard/login?loggedOut=1')).text()).toContain('You are logged out.');
  });

  it('open the admin API for reads only: creating a key still needs the bearer token', async () => {
    const test = app();
    const cookie = await test.login();
    expect((await test.request('/admin/api/keys', { cookie })).status).toBe(200);
    const create = await test.request('/admin/api/keys', {
      method: 'POST',
      cookie,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'sneaky', policy: { limits: [] } }),
    });
    expect(create.status).toBe(401);
    expect(((await create.json()) as { error: { code: string } }).error.code).toBe('invalid_admin_token');
  });
});

describe('the JSON endpoints', () => {
  it('take the admin bearer token', async () => {
    const test = app();
    const response = await test.request('/admin/api/dashboard/keys', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(((await response.json()) as { page: string }).page).toBe('keys');
  });

  it('refuse a missing or wrong token in the OpenAI error shape', async () => {
    const test = app();
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789abc' }] as Array<Record<string, string>>) {
      const response = await test.request('/admin/api/dashboard/overview', { headers });
      expect(response.status).toBe(401);
      const expected = renderError(new TollgateError('invalid_admin_token', 'x')).body.error;
      expect(((await response.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: expected.code, type: expected.type });
    }
  });

  it('guard themselves when mounted without the admin API in front', async () => {
    const test = app();
    const bare = new Hono<AppEnv>();
    bare.route(
      '/admin/api/dashboard',
      createDashboardApiRoutes({
        database: test.db.database,
        reads: openDashboardReads({ kind: 'sqlite', database: test.db.database }),
        adminToken: ADMIN_TOKEN,
        now: () => NOW,
      }),
    );
    bare.onError((error, c) => c.json(renderError(error as TollgateError).body, (error as TollgateError).status as 401));
    expect((await bare.request('/admin/api/dashboard/overview')).status).toBe(401);
    expect((await bare.request('/admin/api/dashboard/overview', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
  });
});

describe('pages', () => {
  it('carry a strict Content-Security-Policy and are never cached', async () => {
    const test = app();
    const cookie = await test.login();
    for (const [path, session] of [
      ['/dashboard', cookie],
      ['/dashboard/login', undefined],
      ['/dashboard/keys', cookie],
    ] as const) {
      const response = await test.request(path, session === undefined ? {} : { cookie: session });
      expect(response.status, path).toBe(200);
      const csp = response.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      const html = await response.text();
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/\sstyle=/);
      expect(html).not.toContain(ADMIN_TOKEN);
    }
  });

  it('answer an unknown dashboard path with a 404 page, and a trailing slash with the page', async () => {
    const test = app();
    const cookie = await test.login();
    const slash = await test.request('/dashboard/keys/?sort=name', { cookie });
    expect(slash.status).toBe(303);
    expect(slash.headers.get('location')).toBe('/dashboard/keys?sort=name');
    expect((await test.request('/dashboard/nowhere', { cookie })).status).toBe(404);
    expect((await test.request('/dashboard/keys/key_doesnotexist', { cookie })).status).toBe(404);
  });
});

describe('assets', () => {
  it('serve uPlot and the dashboard script from the proxy, with long caching, without a session', async () => {
    const test = app();
    const page = await (await test.request('/dashboard/login')).text();
    for (const [name, type] of [
      ['uplot.min.js', 'text/javascript'],
      ['uplot.min.css', 'text/css'],
      ['dashboard.js', 'text/javascript'],
      ['dashboard.css', 'text/css'],
    ] as const) {
      const response = await test.request(`/dashboard/assets/${name}`);
      expect(response.status, name).toBe(200);
      expect(response.headers.get('content-type')).toContain(type);
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect((await response.text()).length).toBeGreaterThan(500);
      if (name.startsWith('dashboard')) expect(page).toMatch(new RegExp(`/dashboard/assets/${name.replace('.', '\\.')}\\?v=[0-9a-f]{12}`));
    }
    expect((await test.request('/dashboard/assets/secrets.txt')).status).toBe(404);
  });
});
