/**
 * Driving the pipeline's stages directly: a real Tollgate (temp SQLite, the
 * in-memory limiter) and hand-built request contexts, so a guarantee can be
 * tested in the one function that holds it.
 */
import { Readable } from 'node:stream';
import { readAttribution } from '../../src/endusers/attribution.js';
import { DIALECTS } from '../../src/dialects/index.js';
import { estimateRequestSync } from '../../src/estimate/index.js';
import type { ClientRequest } from '../../src/http/client-request.js';
import { abortControllerOf, ClientLeft } from '../../src/http/client-left.js';
import { callerFor } from '../../src/keys/caller.js';
import type { Policy } from '../../src/domain/policy.js';
import type { EstimatedRequest } from '../../src/pipeline/context.js';
import type { RequestFinished } from '../../src/pipeline/finished.js';
import { newRequestId } from '../../src/request-id.js';
import { createUpstream } from '../../src/upstreams/pool.js';
import { readClientBody } from '../../src/estimate/client-body.js';
import { buildTestApp, type TestApp } from './app.js';
import { captureLogs } from './logs.js';

export interface PipelineHarness {
  readonly test: TestApp;
  /** Every finished event, in order. */
  readonly finished: RequestFinished[];
  /** A chat request of a key, estimated and ready for admit. */
  request(keySecret: string, body?: Record<string, unknown>, options?: { maxCostMicroUsd?: number; headers?: Record<string, string> }): EstimatedRequest;
  /** The ledger row of a request, read from the database file. */
  row(requestId: string): { status: string; cost_micros: number | null; est_cost_micros: number; prompt_tokens: number | null } | undefined;
  close(): void;
}

export function startHarness(options: { now?: () => number; limiterClock?: () => number } = {}): PipelineHarness {
  // Never called: these tests stop before forwarding, or forward by hand.
  const upstream = createUpstream({
    url: 'http://127.0.0.1:9/v1',
    apiKey: 'sk-unused',
    connectTimeoutMs: 100,
    headersTimeoutMs: 100,
    idleTimeoutMs: 100,
    connections: 1,
  });
  const test = buildTestApp({ upstream, logger: captureLogs('silent').logger, ...options });
  const finished: RequestFinished[] = [];
  test.tollgate.events.subscribe((event) => finished.push(event));
  const now = options.now ?? Date.now;
  let closed = false;
  return {
    test,
    finished,
    request(keySecret, body = {}, options = {}) {
      const key = test.keys.lookup(keySecret);
      if (key === undefined) throw new Error('unknown key');
      const json = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 100, ...body };
      const bytes = Buffer.from(JSON.stringify(json));
      const read = readClientBody('chat', bytes);
      const left = new ClientLeft();
      const client: ClientRequest = {
        headers: {},
        readBody: () => Promise.resolve(bytes),
        stream: () => Readable.from([bytes]),
        left,
        abort: abortControllerOf(left),
      };
      return {
        requestId: newRequestId(),
        endpoint: 'chat',
        startedAt: now(),
        url: `http://tollgate.test${DIALECTS.chat.path}`,
        client,
        caller: callerFor(key, test.keys),
        bytes,
        body: read.fields,
        layout: read.layout,
        edits: [],
        facts: { model: json.model, stream: false, clientWantsUsage: false },
        estimate: estimateRequestSync('chat', json, test.tollgate.pipeline.estimate),
        maxCostMicroUsd: options.maxCostMicroUsd,
        attribution: readAttribution(json, options.headers ?? {}),
      };
    },
    row(requestId) {
      return test.db.database.sqlite
        .prepare('SELECT status, cost_micros, est_cost_micros, prompt_tokens FROM ledger WHERE request_id = ?')
        .get(requestId) as ReturnType<PipelineHarness['row']>;
    },
    close() {
      if (closed) return;
      closed = true;
      test.close();
      void upstream.close();
    },
  };
}

export function issue(harness: PipelineHarness, name: string, policy: Policy, tenant?: string): string {
  return harness.test.issueKey(name, policy, tenant === undefined ? {} : { tenant });
}
