/**
 * Tracing's settings from the standard OpenTelemetry variables (docs/tracing.md). Read here, as
 * every other setting is, and handed to src/tracing; the SDK is never left to read the
 * environment on its own, so a test's settings are the whole truth.
 */
import { invalidConfiguration } from './errors.js';

/** OTEL_TRACES_SAMPLER's values Tollgate supports (the specification's, less the jaeger_remote ones). */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/** Where and how spans are exported; absent from the Config when tracing is off. */
export interface TracingSettings {
  /** The OTLP/HTTP URL spans are posted to (…/v1/traces). */
  readonly url: string;
  /** Headers of every export (a vendor's key: never logged). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly sampler: TraceSampler;
  /** The traceidratio samplers' ratio. */
  readonly ratio: number;
}

interface TracingVariables {
  readonly OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_HEADERS?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string | undefined;
  readonly OTEL_SERVICE_NAME: string;
  readonly OTEL_TRACES_SAMPLER: TraceSampler;
  readonly OTEL_TRACES_SAMPLER_ARG?: number | undefined;
  readonly OTEL_SDK_DISABLED: boolean;
}

/** The tracing settings, or undefined when no endpoint is set or OTEL_SDK_DISABLED is true. */
export function tracingSettingsOf(e: TracingVariables): TracingSettings | undefined {
  if (e.OTEL_SDK_DISABLED) return undefined;
  const url = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? signalUrl(e.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (url === undefined) return undefined;
  return {
    url,
    headers: {
      ...parseHeaders(e.OTEL_EXPORTER_OTLP_HEADERS, 'OTEL_EXPORTER_OTLP_HEADERS'),
      ...parseHeaders(e.OTEL_EXPORTER_OTLP_TRACES_HEADERS, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'),
    },
    serviceName: e.OTEL_SERVICE_NAME,
    sampler: e.OTEL_TRACES_SAMPLER,
    ratio: e.OTEL_TRACES_SAMPLER_ARG ?? 1,
  };
}

/** The base endpoint's traces URL, as the specification builds it: the base plus `v1/traces`. */
function signalUrl(base: string | undefined): string | undefined {
  if (base === undefined) return undefined;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** `name=value,name2=value2` with URL-encoded values (the specification's format). The error names the variable, never a value. */
function parseHeaders(text: string | undefined, variable: string): Record<string, string> {
  const headers: Record<string, string> = {};
  if (text === undefined || text === '') return headers;
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    const name = at < 0 ? '' : pair.slice(0, at).trim();
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw invalidConfiguration([`${variable}: must be name=value pairs separated by commas`]);
    }
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw invalidConfiguration([`${variable}: a value is not URL-encoded correctly`]);
    }
    headers[name.toLowerCase()] = value;
  }
  return headers;
}
