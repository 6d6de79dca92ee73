/** The config file's `alerts` section (src/alerts/settings.ts, through loadConfig). */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configWith(alerts: unknown, env: Record<string, string> = {}) {
  const path = join(dir, `c${Math.random()}.json`);
  writeFileSync(path, JSON.stringify({ alerts }));
  return loadConfig({ TOLLGATE_DB: ':memory:', TOLLGATE_CONFIG: path, ...env });
}

const hook = { name: 'ops', url: 'https://hooks.example.com/tollgate', secretEnv: 'OPS_HOOK_SECRET' };

describe('alerts config', () => {
  it('applies the documented defaults and reads the secret from the named variable', () => {
    const config = configWith({ webhooks: [hook] }, { OPS_HOOK_SECRET: 'whsec-0123456789abcdef' });
    expect(config.alerts).toEqual({
      webhooks: [{ name: 'ops', url: hook.url, secret: 'whsec-0123456789abcdef', events: ['budget.threshold', 'spend.velocity', 'reconcile.drift'] }],
      thresholds: [50, 80, 100],
      velocity: { enabled: true, factor: 3, trailingHours: 24, minimumMicros: 1_000_000 },
      runaway: undefined,
      globalBudgets: [],
      retry: { attempts: 8, initialDelayMs: 1000, maxDelayMs: 3_600_000 },
      timeoutMs: 10_000,
      maxPending: 10_000,
    });
    expect(loadConfig({ TOLLGATE_DB: ':memory:' }).alerts).toBeUndefined();
  });

  it('takes thresholds, velocity and global budgets in dollars', () => {
    const config = configWith(
      {
        webhooks: [hook],
        thresholds: [90, 25, 90],
        velocity: { factor: 2.5, trailingHours: 12, minimumUsd: 0.25 },
        globalBudgets: [{ usd: 1000, period: 'month' }],
      },
      { OPS_HOOK_SECRET: 'whsec-0123456789abcdef' },
    );
    expect(config.alerts?.thresholds).toEqual([25, 90]);
    expect(config.alerts?.velocity).toEqual({ enabled: true, factor: 2.5, trailingHours: 12, minimumMicros: 250_000 });
    expect(config.alerts?.globalBudgets).toEqual([{ microUsd: 1_000_000_000, period: 'month' }]);
  });

  it('turns the runaway stop on with its section, with the documented defaults', () => {
    const env = { OPS_HOOK_SECRET: 'whsec-0123456789abcdef' };
    expect(configWith({ webhooks: [hook], runaway: {} }, env).alerts?.runaway).toEqual({
      factor: 10,
      microUsdPerHour: undefined,
      windowMs: 300_000,
      trailingMs: 86_400_000,
      minimumMicros: 1_000_000,
    });
    // Only a ceiling: no relative rule.
    expect(configWith({ webhooks: [hook], runaway: { usdPerHour: 20, windowMinutes: 2 } }, env).alerts?.runaway).toMatchObject({
      factor: undefined,
      microUsdPerHour: 20_000_000,
      windowMs: 120_000,
    });
    expect(() => configWith({ webhooks: [hook], runaway: { windowMinutes: 0 } }, env)).toThrow(/runaway\.windowMinutes/);
  });

  it('refuses a missing or short secret by naming its variable, never a value', () => {
    expect(() => configWith({ webhooks: [hook] })).toThrow(/OPS_HOOK_SECRET must be set/);
    try {
      configWith({ webhooks: [hook] }, { OPS_HOOK_SECRET: 'short-secret' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('OPS_HOOK_SECRET');
      expect((error as Error).message).not.toContain('short-secret');
    }
  });

  it('refuses a secret written in the file, bad URLs, unknown events and duplicate names', () => {
    const env = { OPS_HOOK_SECRET: 'whsec-0123456789abcdef' };
    expect(() => configWith({ webhooks: [{ ...hook, secret: 'inline-secret-0123456789' }] }, env)).toThrow(ConfigError);
    expect(() => configWith({ webhooks: [{ ...hook, url: 'ftp://x' }] }, env)).toThrow(/http\(s\) URL/);
    expect(() => configWith({ webhooks: [{ ...hook, events: ['budget.exploded'] }] }, env)).toThrow(ConfigError);
    expect(() => configWith({ webhooks: [hook, hook] }, env)).toThrow(/used twice/);
    expect(() => configWith({ webhooks: [hook], thresholds: [0] }, env)).toThrow(ConfigError);
  });
});
