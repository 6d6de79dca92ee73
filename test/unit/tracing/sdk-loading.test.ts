/** The OpenTelemetry SDK is loaded only when an endpoint is set, and a build that needs it and lacks it fails at once. */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { buildTollgate } from '../../../src/tollgate.js';
import { loadTracing } from '../../../src/tracing/index.js';

describe('loading the tracing SDK', () => {
  it('loads nothing with tracing off, and the SDK with an endpoint', async () => {
    expect(await loadTracing(loadConfig({}).tracing)).toBeUndefined();
    const sdk = await loadTracing(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).tracing);
    expect(sdk?.startTracing).toBeTypeOf('function');
  });

  it('refuses to build a traced Tollgate without the SDK, before opening its database', () => {
    const dir = join(tmpdir(), `tollgate-untraced-${process.pid}-${Date.now()}`);
    const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', TOLLGATE_DB: join(dir, 'tollgate.db') });
    expect(() => buildTollgate(config)).toThrow(/tracing is configured .* loadTracing/);
    expect(existsSync(dir)).toBe(false);
  });
});
