/**
 * Tracing as the rest of Tollgate reaches it, without the OpenTelemetry SDK: sdk.ts (and the
 * SDK packages it imports) is loaded by `loadTracing` only when the config names an endpoint, so
 * a process with tracing off never reads it (about 95 ms of start-up and its heap, in every
 * worker of `serve --workers N`). The composition root is synchronous: the async start-up
 * (src/main.ts) loads the SDK and hands it to buildTollgate, which starts it.
 */
import type { TracingSettings } from '../config/index.js';
import type { Logger } from '../logger.js';
import type { RequestEvents } from '../pipeline/finished.js';
import type { startTracing, Tracing } from './sdk.js';

/** The loaded SDK side of tracing (sdk.ts). */
export interface TracingSdk {
  readonly startTracing: typeof startTracing;
}

/** The SDK when `settings` (the config's `tracing`) are set; else undefined, and nothing is loaded. */
export async function loadTracing(settings: TracingSettings | undefined): Promise<TracingSdk | undefined> {
  return settings === undefined ? undefined : import('./sdk.js');
}

/**
 * How to start tracing as the config asks: undefined without settings; with them, from `sdk`,
 * which must then have been loaded. Called before anything is built, so a missing SDK fails
 * before a database is opened.
 */
export function tracingStarter(
  settings: TracingSettings | undefined,
  sdk: TracingSdk | undefined,
): ((logger: Logger, events: RequestEvents) => Tracing) | undefined {
  if (settings === undefined) return undefined;
  // Never tracing silently off when an endpoint is set: the caller skipped loadTracing.
  if (sdk === undefined)
    throw new Error(
      'tracing is configured (an OTLP endpoint is set) but its SDK was not loaded: pass buildTollgate `tracingSdk: await loadTracing(config.tracing)`',
    );
  return (logger, events) => sdk.startTracing(settings, logger, events);
}
