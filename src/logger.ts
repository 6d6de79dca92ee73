/**
 * Structured JSON logs (pino). Secrets are redacted by path as a second line
 * of defence: code never puts a tenant key, the upstream key or the admin
 * token into a log object in the first place.
 */
import { pino, type Logger, type DestinationStream } from 'pino';

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
 * Builds the process logger; `destination` lets tests capture lines. The
 * default writes stdout asynchronously (writes coalesce under load instead of
 * one syscall per line, with no added delay when idle); call
 * {@link flushLogger} before exiting.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'tollgate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/** Writes out buffered log lines (before exit). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
