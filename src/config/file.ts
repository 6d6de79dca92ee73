/**
 * The optional JSON config file (TOLLGATE_CONFIG): its schema — prices, global limits, alerts,
 * upstreams and routes, the reconciliation's projects — and its reading. A file that is not JSON,
 * or holds an unknown or bad entry, is refused whole with every problem named.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { alertsFileSchema } from '../alerts/settings.js';
import { priceTableOverrideSchema } from '../estimate/prices.js';
import { upstreamsFileFields } from '../upstreams/upstream-config.js';
import { invalidConfiguration } from './errors.js';

/** The optional JSON config file. */
const fileSchema = z.strictObject({
  /** USD per 1M tokens (tools: USD per call): `{"models": {"my-model": {"input": 1, "cachedInput": 0.5, "output": 2}}, "fallback": {…}, "tools": {…}}`. */
  prices: priceTableOverrideSchema.optional(),
  /** Limits over all keys together, in the CLI's syntax: `["tokens:2000000/min", "usd:500/day"]`. */
  globalLimits: z.array(z.string()).optional(),
  /** Budget alerts to webhooks (README "Alerts"): webhooks with their secrets' variable names, thresholds, velocity. */
  alerts: alertsFileSchema.optional(),
  /** Upstreams, routes and fallback settings (README, "Upstreams"; src/upstreams/upstream-config.ts). */
  ...upstreamsFileFields,
  /** `tollgate reconcile`: which provider project each key's requests are billed to (`projects.keys` by key name, `projects.tenants` by tenant name, `projects.default`). */
  reconcile: z
    .strictObject({
      projects: z
        .strictObject({
          keys: z.record(z.string(), z.string().min(1)).optional(),
          tenants: z.record(z.string(), z.string().min(1)).optional(),
          default: z.string().min(1).optional(),
        })
        .optional(),
    })
    .optional(),
});

/** The config file, parsed. */
export type ConfigFile = z.output<typeof fileSchema>;

export function readConfigFile(path: string): ConfigFile {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw invalidConfiguration([`TOLLGATE_CONFIG: cannot read ${path} as JSON (${(error as Error).message})`]);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) throw invalidConfiguration(parsed.error.issues.map((issue) => `${path}: ${issue.path.join('.') || '(root)'}: ${issue.message}`));
  return parsed.data;
}
