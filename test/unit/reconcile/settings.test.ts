/** Reconcile's settings: the admin key, the API URL, the tolerance, the project mapping and the schedule, with clear messages for bad values. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { parseUtcDay } from '../../../src/reconcile/run.js';

function withConfigFile<T>(json: unknown, fn: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-reconcile-config-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify(json));
    return fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('reconcile settings', () => {
  it('default to no key, the upstream URL, 1%, no mapping and no schedule', () => {
    const config = loadConfig({ TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9/v1/' });
    expect(config.reconcile).toEqual({
      adminKey: undefined,
      apiUrl: 'http://127.0.0.1:9/v1',
      anthropic: { adminKey: undefined, apiUrl: 'https://api.anthropic.com' },
      projects: undefined,
      tolerancePercent: 1,
      schedule: { everyMs: undefined, days: 7, today: true },
    });
  });

  it("read Anthropic's admin key, its Admin API at TOLLGATE_ANTHROPIC_URL unless told otherwise", () => {
    const proxied = loadConfig({ TOLLGATE_ANTHROPIC_ADMIN_KEY: 'sk-ant-admin-x', TOLLGATE_ANTHROPIC_URL: 'http://127.0.0.1:9' });
    expect(proxied.reconcile.anthropic).toEqual({ adminKey: 'sk-ant-admin-x', apiUrl: 'http://127.0.0.1:9' });
    const apart = loadConfig({ TOLLGATE_ANTHROPIC_ADMIN_KEY: 'sk-ant-admin-x', TOLLGATE_ANTHROPIC_ADMIN_URL: 'https://admin.example.com' });
    expect(apart.reconcile.anthropic).toEqual({ adminKey: 'sk-ant-admin-x', apiUrl: 'https://admin.example.com' });
  });

  it('read the key, the URL, the tolerance and the mapping', () => {
    const projects = { default: 'proj_main', tenants: { acme: 'proj_acme' }, keys: { batch: 'proj_batch' } };
    withConfigFile({ reconcile: { projects } }, (path) => {
      const config = loadConfig({
        TOLLGATE_PROVIDER_ADMIN_KEY: 'sk-admin-x',
        TOLLGATE_PROVIDER_API_URL: 'https://api.openai.com/v1',
        TOLLGATE_RECONCILE_TOLERANCE: '0.5',
        TOLLGATE_CONFIG: path,
      });
      expect(config.reconcile).toEqual({
        adminKey: 'sk-admin-x',
        apiUrl: 'https://api.openai.com/v1',
        anthropic: { adminKey: undefined, apiUrl: 'https://api.anthropic.com' },
        projects,
        tolerancePercent: 0.5,
        schedule: { everyMs: undefined, days: 7, today: true },
      });
    });
  });

  it('read the schedule: how often, how many whole days before today, and whether today', () => {
    const config = loadConfig({ TOLLGATE_RECONCILE_EVERY: '6h', TOLLGATE_RECONCILE_DAYS: '3', TOLLGATE_RECONCILE_TODAY: 'false' });
    expect(config.reconcile.schedule).toEqual({ everyMs: 6 * 3_600_000, days: 3, today: false });
    expect(() => loadConfig({ TOLLGATE_RECONCILE_EVERY: '500ms' })).toThrow(/TOLLGATE_RECONCILE_EVERY: must be at least 1s/);
    expect(() => loadConfig({ TOLLGATE_RECONCILE_EVERY: '200h' })).toThrow(/TOLLGATE_RECONCILE_EVERY: must be at most 168h/);
    expect(() => loadConfig({ TOLLGATE_RECONCILE_DAYS: '0' })).toThrow(/TOLLGATE_RECONCILE_DAYS/);
    expect(() => loadConfig({ TOLLGATE_RECONCILE_TODAY: 'maybe' })).toThrow(/TOLLGATE_RECONCILE_TODAY/);
  });

  it('refuse a bad tolerance or mapping with a message naming it', () => {
    expect(() => loadConfig({ TOLLGATE_RECONCILE_TOLERANCE: 'lots' })).toThrow(/TOLLGATE_RECONCILE_TOLERANCE: must be a percentage/);
    expect(() => loadConfig({ TOLLGATE_RECONCILE_TOLERANCE: '150' })).toThrow(ConfigError);
    withConfigFile({ reconcile: { projects: { tenant: { acme: 'proj' } } } }, (path) => {
      expect(() => loadConfig({ TOLLGATE_CONFIG: path })).toThrow(/reconcile\.projects/);
    });
  });

  it('take days as UTC days, the provider’s', () => {
    const now = Date.parse('2026-11-22T23:30:00Z');
    expect(parseUtcDay('7d', now)).toBe('2026-11-16');
    expect(parseUtcDay('today', now)).toBe('2026-11-22');
    expect(parseUtcDay('month', now)).toBe('2026-11-01');
    expect(parseUtcDay('2026-10-31', now)).toBe('2026-10-31');
    expect(() => parseUtcDay('yesterday', now)).toThrow(RangeError);
    expect(() => parseUtcDay('0d', now)).toThrow(RangeError);
  });
});
