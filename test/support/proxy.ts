/**
 * Starts the real Tollgate server on a free port in front of a fresh fake
 * upstream, the way `tollgate serve` does, for end-to-end tests.
 */
import { rmSync } from 'node:fs';
import { loadConfig, type Config } from '../../src/config/index.js';
import { startServer, type RunningServer } from '../../src/main.js';
import { openDatabase } from '../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../src/storage/sqlite/keys.js';
import type { Policy } from '../../src/domain/policy.js';
import { tempDatabasePath } from './db.js';
import { captureLogs, type CapturedLogs } from './logs.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import type { FakeUpstreamOptions } from '../../src/demo/fake-upstream/index.js';

export const UPSTREAM_KEY = 'sk-test-upstream-secret-0123456789';

export interface TestProxy {
  readonly server: RunningServer;
  readonly fake: FakeUpstream;
  readonly logs: CapturedLogs;
  readonly config: Config;
  /** Base URL for SDKs: http://127.0.0.1:<port>/v1 */
  readonly baseURL: string;
  /** Base URL for Anthropic's SDK (no /v1): http://127.0.0.1:<port> */
  readonly anthropicBaseURL: string;
  /** The SQLite file the proxy writes. */
  readonly dbPath: string;
  /** A key issued before start (name "default", no limits). */
  readonly key: string;
  /** Issues another key in the proxy's database. */
  issueKey(name: string, policy?: Policy, tenant?: string): string;
  close(): Promise<void>;
}

/** `fake`: more options for the fake upstream (e.g. its organization reports). */
export async function startTestProxy(env: Record<string, string> = {}, options: { fake?: Omit<FakeUpstreamOptions, 'apiKey'> } = {}): Promise<TestProxy> {
  const fake = await startFakeUpstream({ ...options.fake, apiKey: UPSTREAM_KEY });
  const { dir, path } = tempDatabasePath();
  const config = loadConfig({
    TOLLGATE_PORT: '0',
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    // The fake answers Anthropic's Messages API too, at its origin (the SDKs' base URL form).
    TOLLGATE_ANTHROPIC_URL: `http://127.0.0.1:${fake.port}`,
    TOLLGATE_ANTHROPIC_KEY: UPSTREAM_KEY,
    TOLLGATE_SHUTDOWN_TIMEOUT: '5s',
    TOLLGATE_DB: path,
    TOLLGATE_KEY_REFRESH: '50ms',
    ...env,
  });
  const admin = openDatabase(config.dbPath);
  const store = new KeyStore(admin);
  const issueKey = (name: string, policy: Policy = { limits: [] }, tenant?: string): string => store.createKey({ name, policy, tenant }).key;
  const key = issueKey('default');
  const logs = captureLogs(config.logLevel);
  const server = await startServer(config, { logger: logs.logger });
  return {
    server,
    fake,
    logs,
    config,
    baseURL: `${server.url}/v1`,
    anthropicBaseURL: server.url,
    dbPath: config.dbPath,
    key,
    issueKey,
    async close() {
      await server.close();
      await fake.close();
      admin.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
