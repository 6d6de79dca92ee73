/**
 * The upstreams of the config file: their zod schema, and how the
 * parsed file becomes {@link UpstreamsConfig} — keys read from the environment
 * variables the file names (never from the file), auth styles and Azure's URL
 * shapes decided once, per-upstream price tables merged over the global one.
 * Without an `upstreams` list, `TOLLGATE_UPSTREAM_URL`/`_KEY` are the one
 * upstream, named `default`, serving every model, as before.
 *
 * Pure: the caller (src/config/index.ts, the only reader of process.env) passes the
 * environment in.
 */
import { z } from 'zod';
import { mergePriceTable, priceTableOverrideSchema, type PriceTable } from '../estimate/prices.js';

const UPSTREAM_KINDS = ['openai', 'azure', 'openai-compatible', 'anthropic'] as const;
export type UpstreamKind = (typeof UPSTREAM_KINDS)[number];

/** How the provider key is sent: `Authorization: Bearer`, Azure's `api-key`, Anthropic's `x-api-key`, or not at all. */
const AUTH_STYLES = ['bearer', 'api-key', 'x-api-key', 'none'] as const;
type AuthStyle = (typeof AUTH_STYLES)[number];

/** Anthropic's API version header when the config names none. */
const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/** An http(s) URL in one canonical form, no trailing slash (so `${base}/chat/completions` is right). */
export function httpUrlSchema(message = 'must be an http(s) URL') {
  return z
    .string()
    .trim()
    .refine((text) => {
      try {
        const url = new URL(text);
        return url.protocol === 'http:' || url.protocol === 'https:';
      } catch {
        return false;
      }
    }, message)
    .transform((text) => text.replace(/\/+$/, ''));
}

const httpUrl = httpUrlSchema();

// Names become metric labels and ledger values: short and plain keeps both bounded and safe.
const upstreamName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/, 'must be 1–40 letters, digits, "_", "." or "-"');
const modelPattern = z.string().min(1).max(200);
const headerName = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name');

const upstreamSchema = z.strictObject({
  /** Unique name: the ledger's `upstream` column, metric label, what `routes` refer to. */
  name: upstreamName,
  kind: z.enum(UPSTREAM_KINDS),
  /** Base URL with its version path (`https://api.openai.com/v1`; Azure: `https://R.openai.azure.com/openai/v1` or `…/openai` for deployment URLs). */
  baseUrl: httpUrl,
  /** Environment variable holding the provider key (the key never goes in the file). */
  keyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
    .optional(),
  /** Default by kind: azure → api-key, anthropic → x-api-key, else bearer. */
  auth: z.enum(AUTH_STYLES).optional(),
  /** `anthropic-version` sent with x-api-key (default 2023-06-01). */
  anthropicVersion: z.string().min(1).max(40).optional(),
  /** Azure's `api-version` query parameter (required for deployment URLs). */
  apiVersion: z.string().min(1).max(40).optional(),
  /** Extra headers sent on every request to this upstream. */
  headers: z.record(headerName, z.string().max(1000)).optional(),
  /** Extra query parameters sent on every request to this upstream. */
  query: z.record(z.string().min(1).max(64), z.string().max(200)).optional(),
  /** Models served: exact names or patterns with `*` (`gpt-4o*`, `*`). */
  models: z.array(modelPattern).default([]),
  /** Public model name → the provider's name for it (Azure: the deployment). Aliased models are served. */
  aliases: z.record(modelPattern, z.string().min(1).max(200)).optional(),
  /** Prices on this upstream, in the top-level `prices` format; models it lacks use the global table. */
  prices: priceTableOverrideSchema.optional(),
  /** Bill at the `usage.cost` (USD) the upstream reports, as OpenRouter does. Default: true for openrouter.ai. */
  usageCost: z.boolean().optional(),
  /** The upstream bills failed attempts (5xx) it answered: each such attempt is counted as billed. */
  billsErrors: z.boolean().optional(),
  /**
   * Prompt tokens reserved per token counted by Tollgate's tokenizer, for models whose tokenizer is
   * not public (src/estimate/README.md). Default 1 for openai/azure, 1.35 for the other kinds.
   */
  promptTokenFactor: z.number().min(1).max(4).optional(),
  connectTimeoutMs: z.number().int().positive().optional(),
  headersTimeoutMs: z.number().int().positive().optional(),
  idleTimeoutMs: z.number().int().positive().optional(),
  connections: z.number().int().positive().max(10_000).optional(),
});

/** The upstream parts of the config file (merged into its schema in src/config/index.ts). */
export const upstreamsFileFields = {
  upstreams: z.array(upstreamSchema).min(1).max(64).optional(),
  /** Ordered upstreams per model or pattern: the first answers, the next ones are its fallbacks. */
  routes: z.record(modelPattern, z.array(upstreamName).min(1).max(16)).optional(),
  /** Fallback behaviour: the longest `Retry-After` honoured, the per-upstream circuit breaker. */
  fallback: z
    .strictObject({
      /** An upstream answering 429 or 503 with Retry-After is skipped that long, at most this (ms). Default 30 000. */
      maxRetryAfterMs: z.number().int().nonnegative().max(3_600_000).optional(),
      /** Consecutive failures that open an upstream's breaker. Default 5. */
      breakerFailures: z.number().int().positive().max(1000).optional(),
      /** How long an open breaker skips its upstream before one probe (ms). Default 30 000. */
      breakerCooldownMs: z.number().int().positive().max(3_600_000).optional(),
    })
    .optional(),
};

type UpstreamFile = z.output<z.ZodObject<typeof upstreamsFileFields>>;

/** One upstream, resolved. */
export interface UpstreamSpec {
  readonly name: string;
  readonly kind: UpstreamKind;
  readonly url: string;
  readonly apiKey: string | undefined;
  readonly auth: AuthStyle;
  /** Headers sent on every request: the configured extras (not the key). */
  readonly headers: Readonly<Record<string, string>>;
  /** Headers sent when the client sent none of that name: `anthropic-version` for x-api-key upstreams. */
  readonly defaultHeaders: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string>>;
  /** Azure with deployment URLs (`/deployments/{deployment}/…?api-version=`) rather than the v1 API. */
  readonly azureDeployments: boolean;
  readonly models: readonly string[];
  readonly aliases: Readonly<Record<string, string>>;
  /** The global price table with this upstream's prices over it. */
  readonly prices: PriceTable;
  readonly usageCost: boolean;
  readonly billsErrors: boolean;
  readonly promptTokenFactor: number;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly connections: number;
  readonly maxShare: number;
  readonly queueTimeoutMs: number;
}

export interface UpstreamsConfig {
  readonly list: readonly UpstreamSpec[];
  /** Ordered upstream names per model or pattern, in the file's order. */
  readonly routes: readonly { readonly pattern: string; readonly upstreams: readonly string[] }[];
  readonly maxRetryAfterMs: number;
  readonly breaker: { readonly failures: number; readonly cooldownMs: number };
  /** True when no `upstreams` list was given: the one upstream of TOLLGATE_UPSTREAM_URL. */
  readonly shorthand: boolean;
}

/** The environment's one-upstream settings, which also give the list's connection defaults. */
export interface UpstreamDefaults {
  readonly url: string;
  readonly apiKey: string | undefined;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly connections: number;
  readonly maxShare: number;
  readonly queueTimeoutMs: number;
}

/** A config problem: where (`upstreams.1.keyEnv`) and what. */
export interface UpstreamProblem {
  readonly path: string;
  readonly message: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Resolves the upstream parts of a parsed config file. Returns the problems
 * instead when there are any (all of them, each with its field's path).
 */
export function resolveUpstreams(
  file: UpstreamFile,
  env: Env,
  defaults: UpstreamDefaults,
  prices: PriceTable,
): { ok: true; value: UpstreamsConfig } | { ok: false; problems: UpstreamProblem[] } {
  const fallback = {
    maxRetryAfterMs: file.fallback?.maxRetryAfterMs ?? 30_000,
    breaker: { failures: file.fallback?.breakerFailures ?? 5, cooldownMs: file.fallback?.breakerCooldownMs ?? 30_000 },
  };
  if (file.upstreams === undefined) {
    if (file.routes !== undefined) return { ok: false, problems: [{ path: 'routes', message: 'routes need an upstreams list' }] };
    const shorthand: UpstreamSpec = {
      ...connectionDefaults(defaults),
      name: 'default',
      kind: 'openai-compatible',
      url: defaults.url,
      apiKey: defaults.apiKey,
      auth: 'bearer',
      headers: {},
      defaultHeaders: {},
      query: {},
      azureDeployments: false,
      models: ['*'],
      aliases: {},
      prices,
      usageCost: false,
      billsErrors: false,
      promptTokenFactor: 1,
    };
    return { ok: true, value: { list: [shorthand], routes: [], ...fallback, shorthand: true } };
  }

  const problems: UpstreamProblem[] = [];
  const names = new Set<string>();
  const list = file.upstreams.map((entry, index): UpstreamSpec => {
    const at = (field: string): string => `upstreams.${index}.${field}`;
    if (names.has(entry.name)) problems.push({ path: at('name'), message: `"${entry.name}" names another upstream too` });
    names.add(entry.name);
    let apiKey: string | undefined;
    if (entry.keyEnv !== undefined) {
      apiKey = env[entry.keyEnv]?.trim();
      if (apiKey === undefined || apiKey === '') problems.push({ path: at('keyEnv'), message: `the environment variable ${entry.keyEnv} is not set` });
    }
    const auth = entry.auth ?? (entry.kind === 'azure' ? 'api-key' : entry.kind === 'anthropic' ? 'x-api-key' : 'bearer');
    const azureDeployments = entry.kind === 'azure' && !/\/v1$/.test(new URL(entry.baseUrl).pathname);
    if (azureDeployments && entry.apiVersion === undefined) {
      problems.push({ path: at('apiVersion'), message: 'Azure deployment URLs need an apiVersion (or use the v1 API: a baseUrl ending in /openai/v1)' });
    }
    if (entry.models.length === 0 && Object.keys(entry.aliases ?? {}).length === 0) {
      problems.push({ path: at('models'), message: 'an upstream must serve at least one model (models or aliases)' });
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(entry.headers ?? {})) {
      const lower = name.toLowerCase();
      if (lower === 'authorization' || lower === 'api-key' || lower === 'x-api-key') {
        problems.push({ path: at(`headers.${name}`), message: 'the key goes in keyEnv, not in headers' });
      } else headers[lower] = value;
    }
    const defaultHeaders: Record<string, string> =
      auth === 'x-api-key' && headers['anthropic-version'] === undefined ? { 'anthropic-version': entry.anthropicVersion ?? DEFAULT_ANTHROPIC_VERSION } : {};
    const query: Record<string, string> = { ...entry.query };
    if (entry.apiVersion !== undefined) query['api-version'] = entry.apiVersion;
    return {
      ...connectionDefaults(defaults),
      name: entry.name,
      kind: entry.kind,
      url: entry.baseUrl,
      apiKey,
      auth,
      headers,
      defaultHeaders,
      query,
      azureDeployments,
      models: entry.models,
      aliases: { ...entry.aliases },
      prices: entry.prices === undefined ? prices : mergePriceTable(prices, entry.prices),
      usageCost: entry.usageCost ?? /(^|\.)openrouter\.ai$/.test(new URL(entry.baseUrl).hostname),
      billsErrors: entry.billsErrors ?? false,
      promptTokenFactor: entry.promptTokenFactor ?? (entry.kind === 'openai' || entry.kind === 'azure' ? 1 : DEFAULT_FOREIGN_TOKEN_FACTOR),
      ...(entry.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: entry.connectTimeoutMs }),
      ...(entry.headersTimeoutMs === undefined ? {} : { headersTimeoutMs: entry.headersTimeoutMs }),
      ...(entry.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: entry.idleTimeoutMs }),
      ...(entry.connections === undefined ? {} : { connections: entry.connections }),
    };
  });
  const routes = Object.entries(file.routes ?? {}).map(([pattern, upstreams]) => {
    upstreams.forEach((name, i) => {
      if (!names.has(name)) problems.push({ path: `routes.${pattern}.${i}`, message: `no upstream is named "${name}"` });
    });
    if (new Set(upstreams).size !== upstreams.length) problems.push({ path: `routes.${pattern}`, message: 'lists an upstream twice' });
    return { pattern, upstreams };
  });
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { list, routes, ...fallback, shorthand: false } };
}

/**
 * Prompt tokens reserved per tiktoken token on upstreams whose tokenizers are not public: a margin,
 * not a measured bound (src/estimate/README.md, "Models without a public tokenizer").
 */
const DEFAULT_FOREIGN_TOKEN_FACTOR = 1.35;

function connectionDefaults(
  d: UpstreamDefaults,
): Pick<UpstreamSpec, 'connectTimeoutMs' | 'headersTimeoutMs' | 'idleTimeoutMs' | 'connections' | 'maxShare' | 'queueTimeoutMs'> {
  return {
    connectTimeoutMs: d.connectTimeoutMs,
    headersTimeoutMs: d.headersTimeoutMs,
    idleTimeoutMs: d.idleTimeoutMs,
    connections: d.connections,
    maxShare: d.maxShare,
    queueTimeoutMs: d.queueTimeoutMs,
  };
}
