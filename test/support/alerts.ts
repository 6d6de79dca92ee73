/**
 * An in-process Tollgate with alerts on (a config file with one webhook whose
 * secret is in an environment variable), a hand-moved clock, the real fake
 * upstream and a real webhook receiver.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import type { Policy } from '../../src/domain/policy.js';
import { Metrics } from '../../src/metrics.js';
import { buildTollgate, type Tollgate } from '../../src/tollgate.js';
import { createUpstream } from '../../src/upstreams/pool.js';
import { openTempDatabase, type TempDatabase } from './db.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { captureLogs, type CapturedLogs } from './logs.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export const HOOK_SECRET = 'whsec-test-0123456789abcdef';
const UPSTREAM_KEY = 'sk-alerts-upstream-0123456789';
const ADMIN_TOKEN = 'admin-alerts-0123456789abcdef';

export interface AlertsHarness {
  readonly tollgate: Tollgate;
  readonly receiver: WebhookReceiver;
  readonly fake: FakeUpstream;
  readonly logs: CapturedLogs;
  readonly db: TempDatabase;
  readonly configPath: string;
  clock: number;
  issueKey(name: string, policy: Policy, tenant?: string): string;
  /** One chat request of about `words` completion tokens of gpt-4o ($10 / 1M out), with `headers` added (a session, an end user). */
  chat(key: string, words: number, headers?: Record<string, string>): Promise<Response>;
  /** One admin API request with the admin token (`body` as JSON). */
  admin(method: string, path: string, body?: unknown): Promise<Response>;
  close(): Promise<void>;
}

export async function startAlertsHarness(alerts: Record<string, unknown>): Promise<AlertsHarness> {
  const fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  const receiver = await startWebhookReceiver();
  const db = openTempDatabase();
  const configPath = join(db.dir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify({ alerts: { webhooks: [{ name: 'ops', url: receiver.url, secretEnv: 'TG_HOOK_SECRET' }], ...alerts } }));
  const config = loadConfig({
    TOLLGATE_DB: db.path,
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_CONFIG: configPath,
    TOLLGATE_MIN_OUTPUT_TOKENS: '1',
    TOLLGATE_KEY_REFRESH: '20ms',
    TG_HOOK_SECRET: HOOK_SECRET,
    TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
  });
  const logs = captureLogs('info');
  const harness: AlertsHarness = {
    clock: Date.parse('2026-11-22T10:00:00Z'),
    tollgate: undefined as unknown as Tollgate,
    receiver,
    fake,
    logs,
    db,
    configPath,
    issueKey: (name, policy, tenant) => harness.tollgate.keyStore.createKey({ name, policy, tenant }).key,
    chat: async (key, words, headers = {}) =>
      harness.tollgate.app.request('/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': `words=${words}`, ...headers },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: words }),
      }),
    admin: async (method, path, body) =>
      harness.tollgate.app.request(path, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    async close() {
      await harness.tollgate.close();
      await receiver.close();
      await fake.close();
      db.remove();
    },
  };
  (harness as { tollgate: Tollgate }).tollgate = buildTollgate(config, {
    logger: logs.logger,
    database: db.database,
    upstream: createUpstream(config.upstream),
    metrics: new Metrics({ defaultMetrics: false }),
    limitSnapshot: undefined,
    now: () => harness.clock,
  });
  await harness.tollgate.start();
  return harness;
}
