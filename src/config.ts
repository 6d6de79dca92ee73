/**
 * Tollgate's configuration: one zod schema over the environment, read once.
 * This is the only module that reads `process.env`; everything else receives
 * a {@link Config}.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { z } from 'zod';
import { alertsFileSchema, resolveAlertSettings, type AlertSettings } from './alerts/settings.js';
import { setTimeZone } from './domain/calendar.js';
import { builtinPriceTable, mergePriceTable, priceTableOverrideSchema, type PriceTable } from './estimate/prices.js';
import { parseLimit, PolicyError, validatePolicy, type LimitSpec } from './domain/policy.js';
import { FAIL_MODES, type FailMode } from './limits/stores/fail-mode.js';
import { parseTrustedProxies } from './http/client-address.js';
import { DEFAULT_NAME_BOUNDS, type NameBounds } from './domain/rollup-names.js';
import { KEY_LABEL_MODES, type KeyLabelMode } from './metrics.js';
import { httpUrlSchema, resolveUpstreams, upstreamsFileFields, type UpstreamsConfig } from './upstreams/upstream-config.js';
import { redactUrlsIn } from './redact-url.js';

const BYTE_UNITS: Record<string, number> = { b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };
const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** "20mb", "512kb", "1048576" → bytes. */
const byteSize = z
  .string()
  .trim()
  .transform((text, ctx) => {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text);
    const factor = match ? BYTE_UNITS[(match[2] || 'b').toLowerCase()] : undefined;
    if (!match || factor === undefined) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a size (e.g. 20mb, 512kb, 1048576)` });
      return z.NEVER;
    }
    const bytes = Math.floor(Number(match[1]) * factor);
    if (bytes < 1) {
      ctx.addIssue({ code: 'custom', message: 'must be at least one byte' });
      return z.NEVER;
    }
    return bytes;
  });

/** Most workers accepted: far above any core count, low enough that a typo cannot fork a thousand processes. */
const MAX_WORKERS = 128;

/** "4" → 4, "auto" → one per core (`os.availableParallelism`). Also used by `serve --workers`. */
export function parseWorkers(text: string, ctx?: z.RefinementCtx): number {
  const value = text.trim().toLowerCase() === 'auto' ? availableParallelism() : Number(text);
  if (!Number.isInteger(value) || value < 1 || value > MAX_WORKERS) {
    const message = `"${text}" is not a worker count (1 to ${MAX_WORKERS}, or auto)`;
    if (ctx === undefined) throw new Error(message);
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  }
  return value;
}

/** "30s", "250ms", "10m", "5000" (milliseconds) → milliseconds. */
const duration = z
  .string()
  .trim()
  .transform((text, ctx) => {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text);
    const factor = match ? DURATION_UNITS[(match[2] || 'ms').toLowerCase()] : undefined;
    if (!match || factor === undefined) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration (e.g. 30s, 250ms, 10m)` });
      return z.NEVER;
    }
    return Math.round(Number(match[1]) * factor);
  });

const port = z
  .string()
  .trim()
  .regex(/^\d+$/, 'must be a whole number')
  .transform(Number)
  .refine((n) => n >= 0 && n <= 65_535, 'must be between 0 and 65535');

const positiveInt = z
  .string()
  .trim()
  .regex(/^\d+$/, 'must be a whole number')
  .transform(Number)
  .refine((n) => n > 0, 'must be greater than zero');

const upstreamUrl = httpUrlSchema('must be an http(s) URL such as https://api.openai.com/v1');

const envSchema = z.object({
  /** Port the proxy listens on. */
  TOLLGATE_PORT: port.default(8787),
  /** Interface the proxy binds; 0.0.0.0 to accept remote clients. */
  TOLLGATE_HOST: z.string().trim().min(1).default('127.0.0.1'),
  /**
   * Connections the kernel holds for the proxy until it accepts them. libuv
   * accepts one per event-loop turn, so a busy loop falls behind a burst;
   * Node's 511 then drops handshakes (README "Many open streams").
   */
  TOLLGATE_LISTEN_BACKLOG: positiveInt.default(4096),
  /** Base URL of the OpenAI-compatible upstream, including its version path. */
  TOLLGATE_UPSTREAM_URL: upstreamUrl.default('https://api.openai.com/v1'),
  /** The provider key Tollgate uses upstream; falls back to OPENAI_API_KEY. */
  TOLLGATE_UPSTREAM_KEY: z.string().trim().min(1).optional(),
  OPENAI_API_KEY: z.string().trim().min(1).optional(),
  /** Base URL of Anthropic's API for /v1/messages, without the version path (as ANTHROPIC_BASE_URL). */
  TOLLGATE_ANTHROPIC_URL: upstreamUrl.default('https://api.anthropic.com'),
  /** The Anthropic key Tollgate uses upstream (sent as x-api-key); falls back to ANTHROPIC_API_KEY. */
  TOLLGATE_ANTHROPIC_KEY: z.string().trim().min(1).optional(),
  ANTHROPIC_API_KEY: z.string().trim().min(1).optional(),
  /** `anthropic-version` sent upstream when a client sends none. */
  TOLLGATE_ANTHROPIC_VERSION: z.string().trim().min(1).default('2023-06-01'),
  /** Time allowed to open a TCP/TLS connection to the upstream. */
  TOLLGATE_UPSTREAM_CONNECT_TIMEOUT: duration.default(10_000),
  /** Time allowed for the upstream to send response headers (non-streamed answers arrive whole, so this is long). */
  TOLLGATE_UPSTREAM_HEADERS_TIMEOUT: duration.default(600_000),
  /** Longest silence allowed between two chunks of an upstream body (stream idle timeout). */
  TOLLGATE_UPSTREAM_IDLE_TIMEOUT: duration.default(300_000),
  /** Keep-alive connections kept open per upstream origin. */
  TOLLGATE_UPSTREAM_CONNECTIONS: positiveInt.default(128),
  /** Share of the upstream connections one key may hold at once (at least one is always left for the others). */
  TOLLGATE_UPSTREAM_MAX_SHARE: z
    .string()
    .trim()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a fraction between 0 and 1, such as 0.75')
    .transform(Number)
    .default(0.75),
  /** Requests one key may have in flight at once, unless its policy says otherwise (--max-in-flight). */
  TOLLGATE_MAX_IN_FLIGHT: positiveInt.default(64),
  /** Longest a request waits for an upstream connection (or an in-flight slot) before a 429. */
  TOLLGATE_QUEUE_TIMEOUT: duration.default(10_000),
  /**
   * Largest request body accepted from a client; enforced while reading. 32 MB is Anthropic's own
   * request limit and holds OpenAI's largest single image (20 MB, ~27 MB as base64); see README.
   */
  TOLLGATE_MAX_BODY: byteSize.default(32 * 1024 * 1024),
  /** Bodies of 1 MB or more one key may have being read and parsed at once (more wait, then 429). */
  TOLLGATE_LARGE_BODIES_PER_KEY: positiveInt.default(4),
  /** Bytes of request bodies being read and parsed at once, all keys together; unset = a quarter of the memory, at most 1 GB. */
  TOLLGATE_BODY_MEMORY: byteSize.optional(),
  /** Open client connections in all; unset = the process's open-file limit minus room for upstreams and files. */
  TOLLGATE_MAX_CONNECTIONS: positiveInt.optional(),
  /** Open client connections from one address (trusted proxies exempt); unset = a quarter of TOLLGATE_MAX_CONNECTIONS. */
  TOLLGATE_MAX_CONNECTIONS_PER_ADDRESS: positiveInt.optional(),
  /** Time a new connection has to send its first request's headers. */
  TOLLGATE_HEADERS_TIMEOUT: duration.default(10_000),
  /** Time a client has to send its whole request (slow clients are cut off). */
  TOLLGATE_REQUEST_TIMEOUT: duration.default(60_000),
  /** Time in-flight requests and streams get to finish on SIGTERM/SIGINT. */
  TOLLGATE_SHUTDOWN_TIMEOUT: duration.default(30_000),
  /** Processes serving the port (`serve --workers N`): a number, or `auto` for one per core. */
  TOLLGATE_WORKERS: z
    .string()
    .trim()
    .default('1')
    .transform((text, ctx) => parseWorkers(text, ctx)),
  /** pino log level. */
  TOLLGATE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** SQLite file for keys, tenants and the ledger (directory created). */
  TOLLGATE_DB: z.string().trim().min(1).default('./data/tollgate.db'),
  /** PostgreSQL shared by replicas (keys, tenants, ledger, rollups); unset = this node's SQLite file holds everything. */
  TOLLGATE_DATABASE_URL: z
    .string()
    .trim()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  /** Replicas: days of raw ledger rows kept in PostgreSQL (older ones are deleted; rollups stay); unset = keep all. */
  TOLLGATE_LEDGER_RETENTION_DAYS: positiveInt.optional(),
  /** Bearer token for /admin/api and the dashboard; both are disabled when unset. */
  TOLLGATE_ADMIN_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  /** Completion tokens reserved per choice when a request sets no max_tokens. */
  TOLLGATE_DEFAULT_MAX_TOKENS: positiveInt.default(4096),
  /** Time zone (IANA name) that budget days, weeks and months and the ledger's daily rollups follow. */
  TOLLGATE_TIMEZONE: z
    .string()
    .trim()
    .default('UTC')
    .refine((name) => {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: name });
        return true;
      } catch {
        return false;
      }
    }, 'must be an IANA time zone name, e.g. Europe/Berlin'),
  /** Fewest completion tokens per choice a budget may cap a request to; with less left, it is refused. */
  TOLLGATE_MIN_OUTPUT_TOKENS: positiveInt.default(1024),
  /** Worst-case completion per choice of a model whose price entry has no output limit (budgets reserve it). */
  TOLLGATE_UNKNOWN_MAX_OUTPUT_TOKENS: positiveInt.default(128_000),
  /**
   * The most input tokens reserved for input Tollgate cannot count (stored history, files by id or
   * URL, MCP servers, hosted tools' results); any more is settled as debt. Unset = what the model's
   * context window leaves beside the counted prompt, which budgets can hold to.
   */
  TOLLGATE_UNSEEN_INPUT_TOKENS: positiveInt.optional(),
  /**
   * Models the price table lacks: priced at the fallback (the table's highest prices unless the
   * config file sets `prices.fallback`), or refused with 400 model_not_found.
   */
  TOLLGATE_UNKNOWN_MODELS: z.enum(['fallback', 'refuse']).default('fallback'),
  /** How often the proxy looks for key changes made by other processes (the CLI). */
  TOLLGATE_KEY_REFRESH: duration.default(250),
  /** Per-key metric labels: the key's name, its id, or none (one series for all keys, for very many keys). */
  TOLLGATE_METRICS_KEY_LABEL: z.enum(KEY_LABEL_MODES).default('name'),
  /** Redis for limits shared by many proxy nodes (escrow leases); unset = in-memory limits. */
  TOLLGATE_REDIS_URL: z.string().trim().min(1).optional(),
  /** Treat TOLLGATE_REDIS_URL (comma-separated seed nodes) as a Redis Cluster. */
  TOLLGATE_REDIS_CLUSTER: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
  /** When Redis is unreachable: keep limiting locally with a safe share (local), admit (open) or refuse (closed). */
  TOLLGATE_FAIL_MODE: z.enum(FAIL_MODES).default('local'),
  /** Longest a request waits for a lease top-up before the fail mode decides (only when its cost exceeds the local lease). */
  TOLLGATE_REDIS_WAIT: duration.default(500),
  /** Timeout of one batch of lease calls; a busy event loop must not read as a dead Redis. */
  TOLLGATE_REDIS_TIMEOUT: duration.default(1000),
  /** Background Responses: first wait before polling the upstream for a job's usage (doubles after each poll). */
  TOLLGATE_BACKGROUND_POLL_INITIAL: duration.default(1000),
  /** Background Responses: longest wait between two polls. */
  TOLLGATE_BACKGROUND_POLL_MAX_INTERVAL: duration.default(30_000),
  /** Background Responses: a job still unfinished this long after its request is settled at its reservation. */
  TOLLGATE_BACKGROUND_POLL_TIMEOUT: duration.default(2 * 3_600_000),
  /** Optional JSON file: price table overrides and global limits. */
  TOLLGATE_CONFIG: z.string().trim().min(1).optional(),
  /** Refusals of one key kept as raw ledger rows per minute (the rest only counted in rollups); `all` keeps every one. */
  TOLLGATE_REFUSAL_ROWS: z
    .string()
    .trim()
    .regex(/^(\d+|all)$/, 'must be a whole number or "all"')
    .transform((text) => (text === 'all' ? Number.POSITIVE_INFINITY : Number(text)))
    .default(60),
  /** Distinct end users one key has rollup rows for per day; the rest are counted under `(other)` (src/storage/sqlite/name-bound.ts). */
  TOLLGATE_MAX_END_USERS: positiveInt.default(DEFAULT_NAME_BOUNDS.endUsers),
  /** Distinct tags one key has rollup rows for per day; the rest are counted under `(other)`. */
  TOLLGATE_MAX_TAGS: positiveInt.default(DEFAULT_NAME_BOUNDS.tags),
  /** Addresses of load balancers/proxies whose X-Forwarded-For is believed (comma-separated). */
  TOLLGATE_TRUSTED_PROXIES: z.string().trim().optional(),
  /** Bearer token /metrics requires; unset = open (as before). */
  TOLLGATE_METRICS_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  /** Serve /metrics on this port (same host) instead of the proxy's port. */
  TOLLGATE_METRICS_PORT: port.optional(),
  /** `tollgate reconcile`: the provider's admin key (OpenAI: an organization admin key), for its usage and cost reports only. */
  TOLLGATE_PROVIDER_ADMIN_KEY: z.string().trim().min(1).optional(),
  /** `tollgate reconcile`: base URL of the provider's organization API (default: TOLLGATE_UPSTREAM_URL). */
  TOLLGATE_PROVIDER_API_URL: upstreamUrl.optional(),
  /** `tollgate reconcile`: how far the two sides may differ, in percent, before a cell or price is flagged. */
  TOLLGATE_RECONCILE_TOLERANCE: z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, 'must be a percentage such as 1 or 0.5')
    .transform(Number)
    .refine((n) => n <= 100, 'must be at most 100')
    .default(1),
});

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

/** Tollgate's configuration, validated and with defaults applied. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** listen(2)'s backlog; the kernel caps it at net.core.somaxconn. */
  readonly listenBacklog: number;
  /** Every upstream (the config file's list, or the one of TOLLGATE_UPSTREAM_URL), its routes and fallback settings. */
  readonly upstreams: UpstreamsConfig;
  /** The environment's one upstream (TOLLGATE_UPSTREAM_*): the shorthand, and the list's connection defaults. */
  readonly upstream: {
    readonly url: string;
    /** Absent only when no key was configured; the upstream will then answer 401. */
    readonly apiKey: string | undefined;
    readonly connectTimeoutMs: number;
    readonly headersTimeoutMs: number;
    readonly idleTimeoutMs: number;
    readonly connections: number;
    readonly maxShare: number;
    readonly queueTimeoutMs: number;
  };
  /**
   * Anthropic's API behind /v1/messages: base URL, key and default `anthropic-version`; the
   * connection settings are the upstream's. Until config-file upstreams replace it.
   */
  readonly anthropic: { readonly url: string; readonly apiKey: string | undefined; readonly version: string };
  readonly maxBodyBytes: number;
  /** Large bodies (1 MB or more) one key may have being read and parsed at once. */
  readonly largeBodiesPerKey: number;
  /** Bytes of bodies being read and parsed at once, all keys together. */
  readonly bodyMemoryBytes: number;
  /**
   * Client connections: caps in all and per address (undefined = derived from the process's
   * open-file limit when the server starts, src/main.ts), and the deadline for a new connection's headers.
   */
  readonly connections: { readonly max: number | undefined; readonly perAddress: number | undefined; readonly headersTimeoutMs: number };
  readonly requestTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  /** Processes serving the port; above 1 a primary forks them (main.ts, startCluster). */
  readonly workers: number;
  readonly logLevel: z.infer<typeof envSchema>['TOLLGATE_LOG_LEVEL'];
  readonly dbPath: string;
  /** PostgreSQL for replicas; with it, `dbPath` is the node's key copy and ledger outbox. */
  readonly databaseUrl: string | undefined;
  /** Days of raw ledger rows PostgreSQL keeps (replicas), or undefined for all. */
  readonly ledgerRetentionDays: number | undefined;
  readonly adminToken: string | undefined;
  readonly defaultMaxCompletionTokens: number;
  readonly minOutputTokens: number;
  readonly fallbackMaxOutputTokens: number;
  /** Bound of the input reserved for what Tollgate cannot count; undefined = the context window (src/estimate/unseen.ts). */
  readonly unseenInputTokens: number | undefined;
  readonly keyRefreshMs: number;
  readonly metricsKeyLabel: KeyLabelMode;
  /** The built-in price table merged with the config file's overrides. */
  readonly prices: PriceTable;
  /** What to do with a model the price table lacks. */
  readonly unknownModels: 'fallback' | 'refuse';
  readonly redis: { readonly urls: readonly string[]; readonly cluster: boolean; readonly waitMs: number; readonly timeoutMs: number } | undefined;
  readonly failMode: FailMode;
  readonly globalLimits: readonly LimitSpec[];
  /** How background Responses are polled until their usage is known. */
  readonly backgroundPoll: { readonly initialMs: number; readonly maxIntervalMs: number; readonly timeoutMs: number };
  /** Requests in flight per key when its policy sets no --max-in-flight. */
  readonly maxInFlight: number;
  /** Refusals of one key written as raw ledger rows per minute (Infinity = every one). */
  readonly refusalRowsPerMinute: number;
  /** Distinct end users and tags per key per day with rollup rows of their own; the rest count under `(other)`. */
  readonly nameBounds: NameBounds;
  /** Proxies believed about X-Forwarded-For (the throttle on presented tokens, src/http/secret-throttle.ts). */
  readonly trustedProxies: ReadonlySet<string>;
  /** /metrics: the bearer token it requires (none = open) and its own port (none = the proxy's). */
  readonly metrics: { readonly token: string | undefined; readonly port: number | undefined };
  /** Budget and velocity alerts to webhooks; undefined when the config file has no `alerts`. */
  readonly alerts: AlertSettings | undefined;
  /** `tollgate reconcile`: the provider's admin key and API, the project mapping, the tolerance in percent. */
  readonly reconcile: {
    readonly adminKey: string | undefined;
    readonly apiUrl: string;
    readonly projects: { readonly keys?: Record<string, string>; readonly tenants?: Record<string, string>; readonly default?: string } | undefined;
    readonly tolerancePercent: number;
  };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(message: string) {
    // A message may quote a value (a URL in a config file's JSON error): never with its credentials.
    super(redactUrlsIn(message));
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads and validates the configuration. Empty variables count as unset.
 * Throws {@link ConfigError} naming every bad variable at once.
 */
export function loadConfig(env: Env = process.env): Config {
  const present: Record<string, string> = {};
  for (const name of Object.keys(envSchema.shape)) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') present[name] = value;
  }
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  // Process-wide: every calendar day the ledger, budgets and reports use is a day in this zone.
  setTimeZone(e.TOLLGATE_TIMEZONE);
  const file = e.TOLLGATE_CONFIG === undefined ? {} : readConfigFile(e.TOLLGATE_CONFIG);
  const upstream = {
    url: e.TOLLGATE_UPSTREAM_URL,
    apiKey: e.TOLLGATE_UPSTREAM_KEY ?? e.OPENAI_API_KEY,
    connectTimeoutMs: e.TOLLGATE_UPSTREAM_CONNECT_TIMEOUT,
    headersTimeoutMs: e.TOLLGATE_UPSTREAM_HEADERS_TIMEOUT,
    idleTimeoutMs: e.TOLLGATE_UPSTREAM_IDLE_TIMEOUT,
    connections: e.TOLLGATE_UPSTREAM_CONNECTIONS,
    maxShare: e.TOLLGATE_UPSTREAM_MAX_SHARE,
    queueTimeoutMs: e.TOLLGATE_QUEUE_TIMEOUT,
  };
  const prices = file.prices === undefined ? builtinPriceTable : mergePriceTable(builtinPriceTable, file.prices);
  const upstreams = resolveUpstreams(file, env, upstream, prices);
  if (!upstreams.ok) {
    const lines = upstreams.problems.map((problem) => `  ${e.TOLLGATE_CONFIG ?? 'TOLLGATE_CONFIG'}: ${problem.path}: ${problem.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return {
    port: e.TOLLGATE_PORT,
    host: e.TOLLGATE_HOST,
    listenBacklog: e.TOLLGATE_LISTEN_BACKLOG,
    upstreams: upstreams.value,
    upstream,
    anthropic: {
      url: e.TOLLGATE_ANTHROPIC_URL,
      apiKey: e.TOLLGATE_ANTHROPIC_KEY ?? e.ANTHROPIC_API_KEY,
      version: e.TOLLGATE_ANTHROPIC_VERSION,
    },
    maxBodyBytes: e.TOLLGATE_MAX_BODY,
    largeBodiesPerKey: e.TOLLGATE_LARGE_BODIES_PER_KEY,
    bodyMemoryBytes: e.TOLLGATE_BODY_MEMORY ?? defaultBodyMemory(e.TOLLGATE_MAX_BODY),
    connections: {
      max: e.TOLLGATE_MAX_CONNECTIONS,
      perAddress: e.TOLLGATE_MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: Math.max(1, e.TOLLGATE_HEADERS_TIMEOUT),
    },
    requestTimeoutMs: e.TOLLGATE_REQUEST_TIMEOUT,
    shutdownTimeoutMs: e.TOLLGATE_SHUTDOWN_TIMEOUT,
    workers: e.TOLLGATE_WORKERS,
    logLevel: e.TOLLGATE_LOG_LEVEL,
    dbPath: e.TOLLGATE_DB,
    databaseUrl: e.TOLLGATE_DATABASE_URL,
    ledgerRetentionDays: e.TOLLGATE_LEDGER_RETENTION_DAYS,
    adminToken: e.TOLLGATE_ADMIN_TOKEN,
    defaultMaxCompletionTokens: e.TOLLGATE_DEFAULT_MAX_TOKENS,
    minOutputTokens: e.TOLLGATE_MIN_OUTPUT_TOKENS,
    fallbackMaxOutputTokens: e.TOLLGATE_UNKNOWN_MAX_OUTPUT_TOKENS,
    unseenInputTokens: e.TOLLGATE_UNSEEN_INPUT_TOKENS,
    keyRefreshMs: e.TOLLGATE_KEY_REFRESH,
    metricsKeyLabel: e.TOLLGATE_METRICS_KEY_LABEL,
    prices,
    unknownModels: e.TOLLGATE_UNKNOWN_MODELS,
    redis:
      e.TOLLGATE_REDIS_URL === undefined
        ? undefined
        : {
            urls: e.TOLLGATE_REDIS_URL.split(',')
              .map((u) => u.trim())
              .filter((u) => u !== ''),
            cluster: e.TOLLGATE_REDIS_CLUSTER,
            waitMs: e.TOLLGATE_REDIS_WAIT,
            timeoutMs: e.TOLLGATE_REDIS_TIMEOUT,
          },
    failMode: e.TOLLGATE_FAIL_MODE,
    globalLimits: parseGlobalLimits(file.globalLimits ?? [], e.TOLLGATE_CONFIG ?? ''),
    backgroundPoll: {
      initialMs: Math.max(1, e.TOLLGATE_BACKGROUND_POLL_INITIAL),
      maxIntervalMs: Math.max(1, e.TOLLGATE_BACKGROUND_POLL_MAX_INTERVAL),
      timeoutMs: e.TOLLGATE_BACKGROUND_POLL_TIMEOUT,
    },
    maxInFlight: e.TOLLGATE_MAX_IN_FLIGHT,
    refusalRowsPerMinute: e.TOLLGATE_REFUSAL_ROWS,
    nameBounds: { endUsers: e.TOLLGATE_MAX_END_USERS, tags: e.TOLLGATE_MAX_TAGS },
    trustedProxies: parseTrustedProxies(e.TOLLGATE_TRUSTED_PROXIES),
    metrics: { token: e.TOLLGATE_METRICS_TOKEN, port: e.TOLLGATE_METRICS_PORT },
    alerts: file.alerts === undefined ? undefined : alertSettings(file.alerts, env, e.TOLLGATE_CONFIG ?? ''),
    reconcile: {
      adminKey: e.TOLLGATE_PROVIDER_ADMIN_KEY,
      apiUrl: e.TOLLGATE_PROVIDER_API_URL ?? e.TOLLGATE_UPSTREAM_URL,
      projects: file.reconcile?.projects,
      tolerancePercent: e.TOLLGATE_RECONCILE_TOLERANCE,
    },
  };
}

/**
 * Memory for bodies being read when TOLLGATE_BODY_MEMORY is unset: a quarter of what the process
 * may use (its cgroup's limit, else the machine's memory), at most 1 GB, and room for two bodies
 * of the largest size at least.
 */
function defaultBodyMemory(maxBody: number): number {
  const machine = totalmem();
  const constrained = process.constrainedMemory?.();
  const available = constrained !== undefined && constrained > 0 && constrained < machine ? constrained : machine;
  return Math.max(2 * maxBody, Math.min(1024 ** 3, Math.floor(available / 4)));
}

/** The file's alerts with each webhook's secret read from the variable it names. */
function alertSettings(file: z.output<typeof alertsFileSchema>, env: Env, path: string): AlertSettings {
  const resolved = resolveAlertSettings(file, env);
  if (!resolved.ok) throw new ConfigError(`invalid configuration:\n${resolved.problems.map((problem) => `  ${path}: ${problem}`).join('\n')}`);
  return resolved.settings;
}

function parseGlobalLimits(texts: readonly string[], path: string): LimitSpec[] {
  try {
    const limits = texts.map(parseLimit);
    validatePolicy({ limits });
    return limits;
  } catch (error) {
    if (error instanceof PolicyError) throw new ConfigError(`invalid configuration:\n  ${path}: globalLimits: ${error.message}`);
    throw error;
  }
}

function readConfigFile(path: string): z.output<typeof fileSchema> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`invalid configuration:\n  TOLLGATE_CONFIG: cannot read ${path} as JSON (${(error as Error).message})`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${path}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
