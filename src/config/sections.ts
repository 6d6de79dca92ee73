/**
 * The config file's sections that need more than their schema: upstreams and routes resolved
 * against the environment's upstream and the price table, global limits parsed in the CLI's syntax
 * and checked as a policy, alert webhooks given the secrets their variables name. Each problem is
 * reported against the file's path, as the schema's are.
 */
import type { z } from 'zod';
import { type alertsFileSchema, resolveAlertSettings, type AlertSettings } from '../alerts/settings.js';
import { parseLimit, PolicyError, validatePolicy, type LimitSpec } from '../domain/policy.js';
import type { PriceTable } from '../estimate/prices.js';
import { resolveUpstreams, type UpstreamDefaults, type UpstreamsConfig } from '../upstreams/upstream-config.js';
import type { Env } from './env.js';
import { invalidConfiguration } from './errors.js';
import type { ConfigFile } from './file.js';

/** Every upstream: the file's list, or the environment's one upstream (`defaults`) when it has none. */
export function upstreamsOf(file: ConfigFile, env: Env, defaults: UpstreamDefaults, prices: PriceTable, path: string): UpstreamsConfig {
  const upstreams = resolveUpstreams(file, env, defaults, prices);
  if (!upstreams.ok) throw invalidConfiguration(upstreams.problems.map((problem) => `${path}: ${problem.path}: ${problem.message}`));
  return upstreams.value;
}

/** The file's alerts with each webhook's secret read from the variable it names. */
export function alertSettings(file: z.output<typeof alertsFileSchema>, env: Env, path: string): AlertSettings {
  const resolved = resolveAlertSettings(file, env);
  if (!resolved.ok) throw invalidConfiguration(resolved.problems.map((problem) => `${path}: ${problem}`));
  return resolved.settings;
}

export function parseGlobalLimits(texts: readonly string[], path: string): LimitSpec[] {
  try {
    const limits = texts.map(parseLimit);
    validatePolicy({ limits });
    return limits;
  } catch (error) {
    if (error instanceof PolicyError) throw invalidConfiguration([`${path}: globalLimits: ${error.message}`]);
    throw error;
  }
}
