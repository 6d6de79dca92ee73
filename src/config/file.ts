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
import { lineAndColumn, offsetOfPath, syntaxErrorOffset } from './json-position.js';

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

/**
 * Reads and validates the config file at `path`. Every problem names its place as
 * `path:line:column` (a syntax error where JSON.parse stopped, a bad entry where its key is).
 */
export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw invalidConfiguration([`TOLLGATE_CONFIG: cannot read ${path} (${(error as Error).message})`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const offset = syntaxErrorOffset(text, message);
    const where = offset === undefined ? path : at(path, text, offset);
    throw invalidConfiguration([`${where}: not valid JSON: ${message.replace(/ in JSON at position \d+.*$/, '')}`]);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    throw invalidConfiguration(
      parsed.error.issues.map((issue) => {
        // An unknown key is reported on its object: point at the key itself.
        const steps = [...issue.path, ...(issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [])] as (string | number)[];
        const offset = offsetOfPath(text, steps);
        return `${offset === undefined ? path : at(path, text, offset)}: ${issue.path.join('.') || '(root)'}: ${issue.message}`;
      }),
    );
  }
  return parsed.data;
}

/** `path:line:column` of `offset` in `text`. */
function at(path: string, text: string, offset: number): string {
  const { line, column } = lineAndColumn(text, offset);
  return `${path}:${line}:${column}`;
}
