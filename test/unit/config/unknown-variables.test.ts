/** Unknown TOLLGATE_* variables are named, with the nearest known name, instead of ignored in silence. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { KNOWN_VARIABLES } from '../../../src/config/env.js';
import { editDistance, nearestName, unknownVariableWarnings } from '../../../src/config/unknown-variables.js';

describe('nearestName', () => {
  it('counts insertions, deletions and substitutions', () => {
    expect(editDistance('TOLLGATE_UPSTEAM_URL', 'TOLLGATE_UPSTREAM_URL')).toBe(1);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('finds the setting a typo meant', () => {
    expect(nearestName('TOLLGATE_UPSTEAM_URL', KNOWN_VARIABLES)).toBe('TOLLGATE_UPSTREAM_URL');
    expect(nearestName('TOLLGATE_ADMINTOKEN', KNOWN_VARIABLES)).toBe('TOLLGATE_ADMIN_TOKEN');
    expect(nearestName('TOLLGATE_REDIS_ULR', KNOWN_VARIABLES)).toBe('TOLLGATE_REDIS_URL');
    expect(nearestName('TOLLGATE_UNKNOWN_MODEL', KNOWN_VARIABLES)).toBe('TOLLGATE_UNKNOWN_MODELS');
  });

  it('suggests nothing for a name unlike every setting', () => {
    expect(nearestName('TOLLGATE_SOMETHING_ELSE_ENTIRELY', KNOWN_VARIABLES)).toBeUndefined();
  });
});

describe('unknownVariableWarnings', () => {
  it('warns once per unknown TOLLGATE_ name, with the nearest known name', () => {
    const warnings = unknownVariableWarnings({ TOLLGATE_UPSTEAM_URL: 'http://x', TOLLGATE_PORT: '1', PATH: '/bin' }, KNOWN_VARIABLES, new Set());
    expect(warnings).toEqual(['TOLLGATE_UPSTEAM_URL is not a Tollgate setting and is ignored; did you mean TOLLGATE_UPSTREAM_URL?']);
  });

  it('leaves alone the settings, the variables of the tests and benchmarks, the client key of the README, and the names the config file refers to', () => {
    const env = {
      TOLLGATE_PORT: '1',
      TOLLGATE_TEST_PG_URL: 'postgres://x',
      TOLLGATE_BENCH_PG_URL: 'postgres://x',
      TOLLGATE_BENCH_ALLOC_FILE: '/tmp/c',
      TOLLGATE_BENCH_GC_FILE: '/tmp/a',
      TOLLGATE_BENCH_STALL_FILE: '/tmp/b',
      TOLLGATE_OPENROUTER_KEY: 'sk-x',
      TOLLGATE_KEY: 'tg-x',
    };
    expect(unknownVariableWarnings(env, KNOWN_VARIABLES, new Set(['TOLLGATE_OPENROUTER_KEY']))).toEqual([]);
  });

  it('comes with the loaded configuration, and an empty list when all is well', () => {
    expect(loadConfig({}).warnings).toEqual([]);
    expect(loadConfig({ TOLLGATE_LOG_LEVL: 'debug' }).warnings).toEqual([
      'TOLLGATE_LOG_LEVL is not a Tollgate setting and is ignored; did you mean TOLLGATE_LOG_LEVEL?',
    ]);
  });
});
