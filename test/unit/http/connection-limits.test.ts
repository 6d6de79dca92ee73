/**
 * The connection caps a server starts with (src/main.ts, connectionLimits):
 * below the process's open-file limit, with room left for upstream
 * connections, the database and logs; one address gets a quarter.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { connectionLimits } from '../../../src/main.js';

describe('connectionLimits', () => {
  it('leaves a quarter of the open-file limit (at least 1,024, at most half) for everything but clients', () => {
    const config = loadConfig({});
    expect(connectionLimits(config, 20_000)).toMatchObject({ maxConnections: 15_000, maxPerAddress: 3_750, headersTimeoutMs: 10_000 });
    expect(connectionLimits(config, 1_048_576)).toMatchObject({ maxConnections: 786_432 });
    expect(connectionLimits(config, 4_096)).toMatchObject({ maxConnections: 3_072, maxPerAddress: 768 });
    expect(connectionLimits(config, 1_024)).toMatchObject({ maxConnections: 512, maxPerAddress: 128 });
  });

  it('takes the settings when given, and never waits longer for headers than for the whole request', () => {
    const config = loadConfig({
      TOLLGATE_MAX_CONNECTIONS: '900',
      TOLLGATE_MAX_CONNECTIONS_PER_ADDRESS: '50',
      TOLLGATE_HEADERS_TIMEOUT: '30s',
      TOLLGATE_REQUEST_TIMEOUT: '5s',
      TOLLGATE_TRUSTED_PROXIES: '10.0.0.1',
    });
    const limits = connectionLimits(config, 20_000);
    expect(limits).toMatchObject({ maxConnections: 900, maxPerAddress: 50, headersTimeoutMs: 5_000 });
    expect([...limits.trusted]).toEqual(['10.0.0.1']);
  });
});
