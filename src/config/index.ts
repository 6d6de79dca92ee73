/**
 * Tollgate's configuration: one zod schema over the environment, read once, and the optional JSON
 * config file. This folder is the only reader of `process.env`; everything else receives a
 * {@link Config}. The parts: the variables and their defaults (env.ts), how their text becomes
 * numbers (values.ts), the file's schema (file.ts) and its resolved sections (sections.ts), the
 * error (errors.ts); this entry assembles them into a {@link Config}.
 */
import { totalmem } from 'node:os';
import type { AlertSettings } from '../alerts/settings.js';
import { setTimeZone } from '../domain/calendar.js';
import type { LimitSpec } from '../domain/policy.js';
import type { NameBounds } from '../domain/rollup-names.js';
import { builtinPriceTable, mergePriceTable, type PriceTable, type UnknownModelMode } from '../estimate/prices.js';
import { parseTrustedProxies } from '../http/client-address.js';
import type { FailMode } from '../coordination/fail-mode.js';
import type { KeyLabelMode } from '../metrics.js';
import type { UpstreamsConfig } from '../upstreams/upstream-config.js';
import { KNOWN_VARIABLES, readEnvironment, type Env, type EnvSettings } from './env.js';
import type { HelperNice } from '../helper-threads.js';
import { readConfigFile, type ConfigFile } from './file.js';
import { alertSettings, parseGlobalLimits, upstreamsOf } from './sections.js';
import { tracingSettingsOf, type TracingSettings } from './tracing.js';
import { reportLoadWarnings, unknownVariableWarnings } from './unknown-variables.js';

export { ConfigError } from './errors.js';
export { parseWorkers } from './values.js';
export type { TracingSettings } from './tracing.js';
export { reportWarnings, sendConfigWarningsTo } from './unknown-variables.js';

/** Tollgate's configuration, validated and with defaults applied. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** listen(2)'s backlog; the kernel caps it at net.core.somaxconn. */
  readonly listenBacklog: number;
  /** Nice value of the serving process's helper threads (0: unchanged; `auto`: src/helper-threads.ts decides). */
  readonly helperNice: HelperNice;
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
  readonly logLevel: EnvSettings['TOLLGATE_LOG_LEVEL'];
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
  /** What to do with a model the price table lacks, per key (src/estimate/price-fallbacks.ts, refusesUnpricedModel). */
  readonly unknownModels: UnknownModelMode;
  readonly redis: { readonly urls: readonly string[]; readonly cluster: boolean; readonly waitMs: number; readonly timeoutMs: number } | undefined;
  readonly failMode: FailMode;
  readonly globalLimits: readonly LimitSpec[];
  /** How batch jobs are followed until they end, and how large an upload may be. */
  readonly batches: { readonly pollMs: number; readonly maxFileBytes: number };
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
  /** `tollgate reconcile`: the provider's (OpenAI's) admin key and API, Anthropic's, the project mapping, the tolerance in percent. */
  readonly reconcile: {
    readonly adminKey: string | undefined;
    readonly apiUrl: string;
    /** Anthropic's Admin API: its admin key (unset: Anthropic's bill is not read) and origin. */
    readonly anthropic: { readonly adminKey: string | undefined; readonly apiUrl: string };
    readonly projects: { readonly keys?: Record<string, string>; readonly tenants?: Record<string, string>; readonly default?: string } | undefined;
    readonly tolerancePercent: number;
    /** `serve`'s scheduled runs: how often (undefined: never), over the last `days` whole UTC days and, with `today`, today. */
    readonly schedule: { readonly everyMs: number | undefined; readonly days: number; readonly today: boolean };
  };
  /** OpenTelemetry traces (docs/tracing.md); undefined = off: no tracer, no span work per request. */
  readonly tracing: TracingSettings | undefined;
  /** Things the operator should hear at start (unknown `TOLLGATE_*` variables, each with the nearest known name). */
  readonly warnings: readonly string[];
}

/**
 * Reads and validates the configuration. Empty variables count as unset.
 * Throws {@link ConfigError} naming every bad variable at once.
 */
/** What npm told this process about how it was started (`npm_lifecycle_event`), for the CLI's hints (src/cli/command-name.ts). */
export function launcherEnvironment(env: Env = process.env): Env {
  return { npm_lifecycle_event: env.npm_lifecycle_event };
}

export function loadConfig(env: Env = process.env): Config {
  const e = readEnvironment(env);
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
  const upstreams = upstreamsOf(file, env, upstream, prices, e.TOLLGATE_CONFIG ?? 'TOLLGATE_CONFIG');
  const warnings = unknownVariableWarnings(env, KNOWN_VARIABLES, variablesReferencedBy(file));
  reportLoadWarnings(warnings);
  return {
    port: e.TOLLGATE_PORT,
    host: e.TOLLGATE_HOST,
    listenBacklog: e.TOLLGATE_LISTEN_BACKLOG,
    helperNice: e.TOLLGATE_HELPER_NICE,
    upstreams,
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
    batches: { pollMs: Math.max(1, e.TOLLGATE_BATCH_POLL), maxFileBytes: e.TOLLGATE_MAX_BATCH_FILE },
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
    tracing: tracingSettingsOf(e),
    alerts: file.alerts === undefined ? undefined : alertSettings(file.alerts, env, e.TOLLGATE_CONFIG ?? ''),
    reconcile: {
      adminKey: e.TOLLGATE_PROVIDER_ADMIN_KEY,
      apiUrl: e.TOLLGATE_PROVIDER_API_URL ?? e.TOLLGATE_UPSTREAM_URL,
      anthropic: { adminKey: e.TOLLGATE_ANTHROPIC_ADMIN_KEY, apiUrl: e.TOLLGATE_ANTHROPIC_ADMIN_URL ?? e.TOLLGATE_ANTHROPIC_URL },
      projects: file.reconcile?.projects,
      tolerancePercent: e.TOLLGATE_RECONCILE_TOLERANCE,
      schedule: { everyMs: e.TOLLGATE_RECONCILE_EVERY, days: e.TOLLGATE_RECONCILE_DAYS, today: e.TOLLGATE_RECONCILE_TODAY },
    },
    warnings,
  };
}

/** Variables the config file names (an upstream's `keyEnv`, a webhook's `secretEnv`): the operator's own, never unknown. */
function variablesReferencedBy(file: ConfigFile): Set<string> {
  const names = new Set<string>();
  for (const upstream of file.upstreams ?? []) if (upstream.keyEnv !== undefined) names.add(upstream.keyEnv);
  for (const hook of file.alerts?.webhooks ?? []) names.add(hook.secretEnv);
  return names;
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
