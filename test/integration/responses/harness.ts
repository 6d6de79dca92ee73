/**
 * A whole Tollgate (the composition root, started and served on a free port)
 * in front of a fake upstream, with the parts the background-response tests
 * look into: the poller, the database, the logs. Two harnesses may share one
 * database file and one fake upstream (a restart).
 */
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { loadConfig } from '../../../src/config/index.js';
import type { Policy } from '../../../src/domain/policy.js';
import { Metrics } from '../../../src/metrics.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { captureLogs, type CapturedLogs } from '../../support/logs.js';
import type { FakeUpstream } from '../../support/fake-upstream.js';

export const UPSTREAM_KEY = 'sk-responses-upstream';

export interface Harness {
  readonly tollgate: Tollgate;
  readonly logs: CapturedLogs;
  readonly baseURL: string;
  /** An SDK client for a key's secret (no retries). */
  client(key: string): OpenAI;
  issueKey(name: string, policy?: Policy, tenant?: string): string;
  /** One ledger row (read from the database file). */
  ledgerRow(requestId: string): LedgerRow | undefined;
  close(): Promise<void>;
}

interface LedgerRow {
  request_id: string;
  status: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  cost_micros: number | null;
  est_cost_micros: number;
  error_code: string | null;
  usage_source: string | null;
}

export async function startHarness(fake: FakeUpstream, dbPath: string, env: Record<string, string> = {}): Promise<Harness> {
  const config = loadConfig({
    TOLLGATE_DB: dbPath,
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_KEY_REFRESH: '20ms',
    TOLLGATE_DEFAULT_MAX_TOKENS: '1000',
    TOLLGATE_BACKGROUND_POLL_INITIAL: '20ms',
    TOLLGATE_BACKGROUND_POLL_MAX_INTERVAL: '100ms',
    ...env,
  });
  const logs = captureLogs('info');
  const tollgate = buildTollgate(config, { logger: logs.logger, metrics: new Metrics({ defaultMetrics: false }) });
  await tollgate.start();
  const server = await new Promise<Server>((resolve) => {
    const created = serve({ fetch: tollgate.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(created as Server)) as Server;
  });
  const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const ledgerRow = tollgate.database.sqlite.prepare(
    `SELECT request_id, status, prompt_tokens, completion_tokens, reasoning_tokens, cost_micros, est_cost_micros, error_code, usage_source
     FROM ledger WHERE request_id = ?`,
  );
  return {
    tollgate,
    logs,
    baseURL,
    client: (key) => new OpenAI({ baseURL, apiKey: key, maxRetries: 0 }),
    issueKey: (name, policy = { limits: [] }, tenant) => tollgate.keyStore.createKey({ name, policy, tenant }).key,
    ledgerRow: (requestId) => ledgerRow.get(requestId) as LedgerRow | undefined,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // Closes the database too (the harness opened it through the config).
      await tollgate.close();
    },
  };
}

/** The scenario header of the fake upstream, as SDK request options. */
export function scenario(value: string): { headers: Record<string, string> } {
  return { headers: { 'x-fake-scenario': value } };
}
