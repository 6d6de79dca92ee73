/**
 * The environment variables Tollgate reads, each with its default and its JSDoc (the reference the
 * README's table follows), and {@link readEnvironment}, which validates them all at once. This is
 * the only place `process.env`'s names are spelled out.
 */
import { z } from 'zod';
import { DEFAULT_NAME_BOUNDS } from '../domain/rollup-names.js';
import { FAIL_MODES } from '../coordination/fail-mode.js';
import { KEY_LABEL_MODES } from '../metrics.js';
import { UNKNOWN_MODEL_MODES } from '../estimate/prices.js';
import { httpUrlSchema } from '../upstreams/upstream-config.js';
import { invalidConfiguration } from './errors.js';
import { TRACE_SAMPLERS } from './tracing.js';
import { byteSize, duration, parseWorkers, port, positiveInt } from './values.js';

const upstreamUrl = httpUrlSchema('must be an http(s) URL such as https://api.openai.com/v1');
const otlpUrl = httpUrlSchema('must be an http(s) URL such as http://localhost:4318');

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
  /**
   * Nice value `serve` gives its helper threads (V8's collector and compiler
   * helpers, libuv's pool, Tollgate's workers) so the event loop has the core
   * first (src/helper-threads.ts); 0 leaves them alone; `auto`: 19 while the
   * process may run on one CPU only, else 0. Linux only.
   */
  TOLLGATE_HELPER_NICE: z
    .string()
    .trim()
    .regex(/^(auto|1?[0-9])$/, 'must be auto or a whole number from 0 to 19')
    .transform((value) => (value === 'auto' ? 'auto' : Number(value)))
    .default('auto'),
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
   * Models the price table lacks: `refuse-capped` refuses them (400 model_not_priced) for keys with
   * a budget or a `usd` limit and prices them at the fallback for the others; `fallback` prices
   * them at the fallback for every key (the table's highest prices unless the config file sets
   * `prices.fallback`); `refuse` refuses them for every key (400 model_not_found).
   */
  TOLLGATE_UNKNOWN_MODELS: z.enum(UNKNOWN_MODEL_MODES).default('refuse-capped'),
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
  /** Batch jobs: how often unsettled batches are looked at upstream until they end and are settled. */
  TOLLGATE_BATCH_POLL: duration.default(30_000),
  /** Batch jobs: the most bytes one uploaded batch input file may have (its whole multipart body). */
  TOLLGATE_MAX_BATCH_FILE: byteSize.default(201 * 1024 * 1024),
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
  /** `tollgate reconcile`: Anthropic's admin key (`sk-ant-admin…`), for its Admin API usage and cost reports only. */
  TOLLGATE_ANTHROPIC_ADMIN_KEY: z.string().trim().min(1).optional(),
  /** `tollgate reconcile`: origin of Anthropic's Admin API (default: TOLLGATE_ANTHROPIC_URL). */
  TOLLGATE_ANTHROPIC_ADMIN_URL: upstreamUrl.optional(),
  /** `tollgate reconcile`: how far the two sides may differ, in percent, before a cell or price is flagged. */
  TOLLGATE_RECONCILE_TOLERANCE: z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, 'must be a percentage such as 1 or 0.5')
    .transform(Number)
    .refine((n) => n <= 100, 'must be at most 100')
    .default(1),
  /** `serve`: reconcile with every provider whose admin key is set this often (docs/reconciliation.md, "Scheduled runs"); unset: never. */
  TOLLGATE_RECONCILE_EVERY: duration
    .refine((ms) => ms >= 1000, 'must be at least 1s')
    // A timer's longest delay is about 24.8 days.
    .refine((ms) => ms <= 168 * 3_600_000, 'must be at most 168h')
    .optional(),
  /** Scheduled runs compare this many whole UTC days before today. */
  TOLLGATE_RECONCILE_DAYS: positiveInt.refine((n) => n <= 366, 'must be at most 366').default(7),
  /** Scheduled runs compare today's partial day too (off when the provider's reports lag). */
  TOLLGATE_RECONCILE_TODAY: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  /** OpenTelemetry (docs/tracing.md): base URL of the OTLP/HTTP receiver; traces go to its `/v1/traces`. Unset (and no traces endpoint) = tracing off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl.optional(),
  /** OpenTelemetry: full URL traces are posted to (wins over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl.optional(),
  /** OpenTelemetry: headers sent with every export (`name=value,…`, values URL-encoded), e.g. a vendor's API key. */
  OTEL_EXPORTER_OTLP_HEADERS: z.string().trim().optional(),
  /** OpenTelemetry: headers for trace exports only, added to OTEL_EXPORTER_OTLP_HEADERS (these win). */
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z.string().trim().optional(),
  /** OpenTelemetry: the `service.name` of Tollgate's spans. */
  OTEL_SERVICE_NAME: z.string().trim().min(1).default('tollgate'),
  /** OpenTelemetry: which requests are traced (always_on, always_off, traceidratio, and their parentbased_ forms). */
  OTEL_TRACES_SAMPLER: z.enum(TRACE_SAMPLERS).default('parentbased_always_on'),
  /** OpenTelemetry: the ratio of the traceidratio samplers, between 0 and 1. */
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .trim()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a fraction between 0 and 1, such as 0.25')
    .transform(Number)
    .optional(),
  /** OpenTelemetry: `true` turns tracing off whatever the endpoint (the SDKs' common switch). */
  OTEL_SDK_DISABLED: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
});

/** Every variable Tollgate reads (the warnings about unknown `TOLLGATE_*` names compare with these). */
export const KNOWN_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

/** The environment as Tollgate reads it: the process's, or a test's. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Every variable parsed, with defaults applied. */
export type EnvSettings = z.output<typeof envSchema>;

/**
 * The variables of `env` parsed and with defaults applied. Empty variables count as unset.
 * Throws a ConfigError naming every bad variable at once.
 */
export function readEnvironment(env: Env): EnvSettings {
  const present: Record<string, string> = {};
  for (const name of KNOWN_VARIABLES) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') present[name] = value;
  }
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) throw invalidConfiguration(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  return parsed.data;
}
