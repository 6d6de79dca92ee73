/**
 * Shared pieces of the dashboard tests: the app in-process with a fixed
 * clock, a logged-in cookie, and ledger rows written through the real
 * LedgerWriter (so the rollups are the writer's, not hand-made).
 */
import { createUpstream } from '../../src/upstreams/pool.js';
import type { Completion, LedgerWriter, PendingEntry } from '../../src/storage/ledger.js';
import { buildTestApp, type TestApp } from './app.js';
import { captureLogs } from './logs.js';

export const ADMIN_TOKEN = 'dashboard-admin-token-0123456789';

/** An upstream the dashboard tests never call. */
function unusedUpstream() {
  return createUpstream({
    url: 'http://127.0.0.1:9/v1',
    apiKey: 'sk-unused',
    connectTimeoutMs: 100,
    headersTimeoutMs: 100,
    idleTimeoutMs: 100,
    connections: 1,
  });
}

export interface DashboardTestApp extends TestApp {
  /** The fixed clock; tests move it. */
  readonly clock: { now: number };
  request(path: string, init?: RequestInit & { cookie?: string }): Promise<Response>;
  /** Logs in through the form and returns the `Cookie` header value. */
  login(token?: string): Promise<string>;
}

export function buildDashboardApp(options: { adminToken?: string | undefined; now: number }): DashboardTestApp {
  const clock = { now: options.now };
  const test = buildTestApp({
    upstream: unusedUpstream(),
    logger: captureLogs('silent').logger,
    ...(options.adminToken === undefined ? {} : { adminToken: options.adminToken }),
    now: () => clock.now,
  });
  const request = (path: string, init: RequestInit & { cookie?: string } = {}) => {
    const headers = new Headers(init.headers);
    if (init.cookie !== undefined) headers.set('cookie', init.cookie);
    return Promise.resolve(test.app.request(path, { ...init, headers }));
  };
  return {
    ...test,
    clock,
    request,
    async login(token = ADMIN_TOKEN) {
      const response = await request('/dashboard/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next: '/dashboard' }).toString(),
      });
      const setCookie = response.headers.get('set-cookie');
      if (response.status !== 303 || setCookie === null) throw new Error(`login failed: ${response.status}`);
      return setCookie.split(';')[0]!;
    },
  };
}

export interface RequestSpec {
  readonly keyId: string;
  readonly tenantId?: string | null;
  readonly createdAt: number;
  readonly model?: string;
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  /** Prompt tokens written to the prompt cache, kept 5 minutes and 1 hour. */
  readonly cacheWrite5mTokens?: number;
  readonly cacheWrite1hTokens?: number;
  readonly costMicros?: number;
  readonly estCostMicros?: number;
  readonly status?: Completion['status'] | 'pending';
  readonly httpStatus?: number;
  readonly latencyMs?: number;
}

let counter = 0;

/** Writes one request through the writer (pending, then settled unless `status: 'pending'`); returns its id. */
export async function recordRequest(writer: LedgerWriter, spec: RequestSpec): Promise<string> {
  counter += 1;
  const requestId = `req_test_${Date.now().toString(36)}_${counter}`;
  const entry: PendingEntry = {
    requestId,
    keyId: spec.keyId,
    tenantId: spec.tenantId ?? null,
    createdAt: spec.createdAt,
    endpoint: 'chat',
    model: spec.model ?? 'gpt-4o-mini',
    stream: false,
    estPromptTokens: spec.promptTokens ?? 10,
    estCompletionTokens: 100,
    estCostMicros: spec.estCostMicros ?? 70,
    priceKnown: true,
  };
  const begun = writer.begin(entry);
  writer.flush();
  await begun;
  if (spec.status !== 'pending') settleRequest(writer, requestId, spec);
  return requestId;
}

/** Settles a pending request written by {@link recordRequest}. */
export function settleRequest(writer: LedgerWriter, requestId: string, spec: Omit<RequestSpec, 'keyId'>): void {
  const status = spec.status === undefined || spec.status === 'pending' ? 'ok' : spec.status;
  writer.complete({
    requestId,
    completedAt: spec.createdAt + (spec.latencyMs ?? 300),
    status,
    httpStatus: spec.httpStatus ?? (status === 'ok' ? 200 : 500),
    promptTokens: spec.promptTokens ?? 10,
    cachedTokens: 0,
    completionTokens: spec.completionTokens ?? 20,
    reasoningTokens: 0,
    ...(spec.cacheWrite5mTokens === undefined ? {} : { cacheWrite5mTokens: spec.cacheWrite5mTokens }),
    ...(spec.cacheWrite1hTokens === undefined ? {} : { cacheWrite1hTokens: spec.cacheWrite1hTokens }),
    costMicros: spec.costMicros ?? 25,
    usageSource: 'reported',
    latencyMs: spec.latencyMs ?? 300,
    ttftMs: null,
    upstreamRequestId: null,
    errorCode: null,
  });
  writer.flush();
}

/** A request refused with 429 by a limit or a budget. */
export function recordRejection(writer: LedgerWriter, spec: { keyId: string; createdAt: number; reason: 'rate_limit' | 'budget'; model?: string }): void {
  counter += 1;
  writer.reject({
    requestId: `req_rejected_${Date.now().toString(36)}_${counter}`,
    keyId: spec.keyId,
    tenantId: null,
    createdAt: spec.createdAt,
    endpoint: 'chat',
    model: spec.model ?? 'gpt-4o-mini',
    stream: false,
    status: 'rejected',
    httpStatus: 429,
    errorCode: spec.reason === 'rate_limit' ? 'rate_limit_exceeded' : 'insufficient_quota',
    reason: spec.reason,
    estPromptTokens: 10,
    estCompletionTokens: 100,
    estCostMicros: 70,
  });
  writer.flush();
}
