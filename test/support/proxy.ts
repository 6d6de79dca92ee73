/**
 * Starts the real Tollgate server on a free port in front of a fresh fake
 * upstream, the way `tollgate serve` does, for end-to-end tests.
 */
import { loadConfig, type Config } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/main.js';
import { captureLogs, type CapturedLogs } from './logs.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';

export const UPSTREAM_KEY = 'sk-test-upstream-secret-0123456789';

export interface TestProxy {
  readonly server: RunningServer;
  readonly fake: FakeUpstream;
  readonly logs: CapturedLogs;
  readonly config: Config;
  /** Base URL for SDKs: http://127.0.0.1:<port>/v1 */
  readonly baseURL: string;
  close(): Promise<void>;
}

export async function startTestProxy(env: Record<string, string> = {}): Promise<TestProxy> {
  const fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  const config = loadConfig({
    TOLLGATE_PORT: '0',
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_SHUTDOWN_TIMEOUT: '5s',
    ...env,
  });
  const logs = captureLogs(config.logLevel);
  const server = await startServer(config, { logger: logs.logger });
  return {
    server,
    fake,
    logs,
    config,
    baseURL: `${server.url}/v1`,
    async close() {
      await server.close();
      await fake.close();
    },
  };
}
