/** Tracing's settings from the standard OpenTelemetry variables: off unless an endpoint is named. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';

describe('tracing settings', () => {
  it('is off with no endpoint, and with OTEL_SDK_DISABLED whatever the endpoint', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
  });

  it('posts to the base endpoint’s /v1/traces with the defaults of the specification', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'tollgate',
      sampler: 'parentbased_always_on',
      ratio: 1,
    });
  });

  it('prefers the traces endpoint as given, and merges the traces headers over the common ones', () => {
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://api.honeycomb.io/v1/traces',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=common,x-env=prod%20eu',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'X-Honeycomb-Team=traces-only',
      OTEL_SERVICE_NAME: 'gateway',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).tracing;
    expect(tracing).toEqual({
      url: 'https://api.honeycomb.io/v1/traces',
      headers: { 'x-honeycomb-team': 'traces-only', 'x-env': 'prod eu' },
      serviceName: 'gateway',
      sampler: 'parentbased_traceidratio',
      ratio: 0.25,
    });
  });

  it('refuses bad values naming the variable, never quoting a header value', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    let message = '';
    try {
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'secret-vendor-key-123' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/OTEL_EXPORTER_OTLP_HEADERS: must be name=value pairs/);
    expect(message).not.toContain('secret-vendor-key-123');
  });
});
