/** `tollgate keys create|update|show` with per-end-user and per-tag options, and the admin API's fields for them. */
import { afterAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { cli } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream } from '../../support/fake-upstream.js';
import { createUpstream } from '../../../src/upstreams/pool.js';
import { buildTestApp } from '../../support/app.js';
import { captureLogs } from '../../support/logs.js';

const { dir, path } = tempDatabasePath();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface KeyJson {
  policy: { endUser?: { limits: Array<{ unit: string; amount: number }>; budgets?: Array<{ microUsd: number; period: string }> }; tagBudgets?: unknown[] };
}

describe('keys with per-user and per-tag policy', () => {
  it('creates, shows, updates and clears them, keeping what an update does not name', async () => {
    const created = await cli(
      '--db',
      path,
      'keys',
      'create',
      '--name',
      'app',
      '--user-rpm',
      '20',
      '--user-budget-usd',
      '0.5',
      '--tag-budget',
      'batch=25/month',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/per user\s+requests:20\/min, \$0\.50*\/month/);
    expect(created.stdout).toMatch(/tag budgets\s+batch \$25(\.0+)?\/month/);

    const updated = await cli('--db', path, 'keys', 'update', 'app', '--user-budget-usd', '1', '--user-budget-period', 'day', '--json');
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.json<KeyJson>().policy.endUser).toEqual({
      limits: [{ name: 'requests-per-min', unit: 'requests', amount: 20, period: 'min', burst: 20 }],
      budgets: [{ microUsd: 1_000_000, period: 'day' }],
    });
    expect(updated.json<KeyJson>().policy.tagBudgets).toHaveLength(1);

    const cleared = await cli('--db', path, 'keys', 'update', 'app', '--no-user-policy', '--no-tag-budgets', '--json');
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(cleared.json<KeyJson>().policy).not.toHaveProperty('endUser');
    expect(cleared.json<KeyJson>().policy).not.toHaveProperty('tagBudgets');
  });

  it('refuses malformed options with a clear message and exit code 2', async () => {
    for (const args of [
      ['--tag-budget', 'not a tag=5/day'],
      ['--tag-budget', 'batch=5/year'],
      ['--user-budget-usd', '-1'],
      ['--user-limit', 'requests:0/min'],
    ]) {
      const result = await cli('--db', path, 'keys', 'create', '--name', `bad-${args.join('')}`, ...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.length).toBeGreaterThan(0);
    }
  });

  it('takes endUser and tagBudgets in the admin API, and refuses bad ones with 400', async () => {
    const fake = await startFakeUpstream();
    const upstream = createUpstream({ url: fake.url, apiKey: 'sk', connectTimeoutMs: 1000, headersTimeoutMs: 1000, idleTimeoutMs: 1000, connections: 1 });
    const app = buildTestApp({ upstream, logger: captureLogs('silent').logger, adminToken: 'admin-token-0123456789' });
    try {
      const call = (method: string, url: string, body: unknown) =>
        Promise.resolve(
          app.app.request(`http://tollgate.test/admin/api${url}`, {
            method,
            headers: { authorization: 'Bearer admin-token-0123456789', 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }),
        );
      const created = await call('POST', '/keys', {
        name: 'api-app',
        policy: { limits: [], endUser: { limits: [], budgets: [{ microUsd: 5, period: 'day' }] }, tagBudgets: [{ tag: 'x', microUsd: 7, period: 'week' }] },
      });
      expect(created.status).toBe(201);
      const patched = await call('PATCH', '/keys/api-app', { endUser: null, tagBudgets: [{ tag: 'y', microUsd: 9, period: 'month' }] });
      expect(patched.status).toBe(200);
      expect(((await patched.json()) as KeyJson).policy).toEqual({ limits: [], tagBudgets: [{ tag: 'y', microUsd: 9, period: 'month' }] });
      const bad = await call('PATCH', '/keys/api-app', { tagBudgets: [{ tag: 'has space', microUsd: 9, period: 'month' }] });
      expect(bad.status).toBe(400);
      const byUser = await Promise.resolve(
        app.app.request('http://tollgate.test/admin/api/spend?by=user&since=today', { headers: { authorization: 'Bearer admin-token-0123456789' } }),
      );
      expect(byUser.status).toBe(200);
      expect(((await byUser.json()) as { by: string }).by).toBe('user');
    } finally {
      app.close();
      await upstream.close();
      await fake.close();
    }
  });
});
