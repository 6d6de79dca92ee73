/**
 * Structured JSON logs (pino). Secrets are redacted by path as a second line
 * of defence: code never puts a tenant key, the upstream key or the admin
 * token into a log object in the first place.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { redactUrlsIn } from './redact-url.js';

export type { Logger };

/** Paths that could carry a secret if someone logged a headers object. */
const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'headers["api-key"]',
  'headers["x-api-key"]',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers["api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'apiKey',
  'upstreamKey',
  'adminToken',
  'key',
  'token',
];

/**
 * A driver's or the runtime's error text may quote a URL with its
 * credentials (`Request cannot be constructed from a URL that includes
 * credentials: https://user:pass@…`): the fields errors are logged under
 * have every URL in them redacted (src/redact-url.ts). Only lines that carry
 * these fields pay for it; request lines have none of them.
 */
function withUrlsRedacted(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactUrlsIn(value);
  if (depth > 3 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => withUrlsRedacted(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) out[name] = withUrlsRedacted(item, depth + 1);
  return out;
}

const SERIALIZERS = {
  err: (error: Error) => withUrlsRedacted(pino.stdSerializers.err(error)),
  message: withUrlsRedacted,
  cause: withUrlsRedacted,
};

/** The second {@link isoTimeAt} last wrote, and its line field up to the milliseconds. */
let timeSecond = Number.NaN;
let timePrefix = '';

/**
 * pino's `time` field as `pino.stdTimeFunctions.isoTime` writes it, `,"time":"<ISO 8601>"`, with
 * the date and time up to the second built once a second: `toISOString` takes its own
 * calendar math every call, about 7,000 instructions a line (docs/performance.md, "Values bound in
 * column order").
 */
export function isoTimeAt(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== timeSecond) {
    timeSecond = second;
    timePrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 20)}`;
  }
  const milli = ms - second * 1000;
  return `${timePrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z"`;
}

/** Lines are written in batches of this many bytes … */
const LOG_BATCH_BYTES = 3072;
/**
 * … and never more than PIPE_BUF in one write: each write is whole lines that
 * a pipe takes atomically, so the workers of `serve --workers`, sharing one
 * stdout, never interleave inside a line.
 */
const LOG_WRITE_MAX_BYTES = 4096;
/** … or what has gathered, at least this often (ms). */
const LOG_FLUSH_MS = 100;

/**
 * Builds the process logger; `destination` lets tests capture lines. The
 * default writes stdout asynchronously in batches of 3–4 KB (ten or so
 * request lines per write instead of one syscall each: the line's write was
 * about 5% of the proxy's CPU per request, README "Performance"), and writes
 * whatever has gathered every 100 ms, so a quiet proxy's lines are never
 * later than that; call {@link flushLogger} before exiting.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'tollgate' },
      timestamp: () => isoTimeAt(Date.now()),
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: SERIALIZERS,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? batchedStdout(),
  );
}

function batchedStdout(): DestinationStream {
  return pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES, maxWrite: LOG_WRITE_MAX_BYTES, periodicFlush: LOG_FLUSH_MS });
}

/** Writes out buffered log lines (before exit). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
