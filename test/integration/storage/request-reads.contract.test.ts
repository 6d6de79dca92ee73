/**
 * One ledger row by its request id (src/storage/request-reads.ts) over both backends: the key
 * that made the request reads its row — settled or pending, every column the route answers with,
 * cache writes included — and another key, or an unknown id, reads nothing. On PostgreSQL the same from every node's
 * shipped rows alone (a node that did not answer the request).
 */
import { beforeAll, expect, it } from 'vitest';
import type { Backend, SharedBackend } from '../../../src/storage/backend.js';
import { openRequestReads } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';
import { recordRequest } from '../../support/dashboard.js';
import { seedBackend } from '../../support/read-seed.js';

const CREATED = Date.parse('2026-11-18T10:00:00Z');

describeBackends('request reads', (fixture) => {
  let backend: Backend;
  const keys = { own: '', other: '' };
  const ids = { settled: '', pending: '' };

  beforeAll(async () => {
    backend = await fixture.fresh();
    await seedBackend(backend, async ({ store, writer }) => {
      keys.own = store.createKey({ name: 'own', policy: { limits: [] } }).view.id;
      keys.other = store.createKey({ name: 'other', policy: { limits: [] } }).view.id;
      ids.settled = await recordRequest(writer, {
        keyId: keys.own,
        createdAt: CREATED,
        promptTokens: 500,
        completionTokens: 40,
        cacheWrite5mTokens: 120,
        cacheWrite1hTokens: 30,
        costMicros: 7_000,
      });
      ids.pending = await recordRequest(writer, { keyId: keys.own, createdAt: CREATED + 1, status: 'pending', estCostMicros: 3_333 });
    });
  });

  /** The backends a read may go through: the node's own, and on PostgreSQL the shared rows alone. */
  const readers = (): Array<[string, SharedBackend]> =>
    backend.kind === 'postgres'
      ? [
          ['node', backend],
          ['shared rows only', { kind: 'postgres', pool: backend.pool }],
        ]
      : [['node', backend]];

  it("reads its key's settled and pending rows, every column", async () => {
    for (const [label, from] of readers()) {
      const reads = openRequestReads(from);
      expect(await reads.entryOf(keys.own, ids.settled), label).toEqual({
        requestId: ids.settled,
        keyId: keys.own,
        createdAt: CREATED,
        completedAt: CREATED + 300,
        endpoint: 'chat',
        model: 'gpt-4o-mini',
        stream: false,
        status: 'ok',
        httpStatus: 200,
        estPromptTokens: 500,
        estCompletionTokens: 100,
        estCostMicros: 70,
        promptTokens: 500,
        cachedTokens: 0,
        completionTokens: 40,
        reasoningTokens: 0,
        audioPromptTokens: 0,
        audioCompletionTokens: 0,
        cacheWrite5mTokens: 120,
        cacheWrite1hTokens: 30,
        serviceTier: null,
        toolCostMicros: 0,
        costMicros: 7_000,
        priceKnown: true,
        usageSource: 'reported',
        latencyMs: 300,
        ttftMs: null,
        upstreamRequestId: null,
        upstream: null,
        errorCode: null,
        endUser: null,
      });
      expect(await reads.entryOf(keys.own, ids.pending), label).toMatchObject({ status: 'pending', costMicros: null, estCostMicros: 3_333, completedAt: null });
    }
  });

  it("reads nothing for another key's request or an unknown id", async () => {
    for (const [label, from] of readers()) {
      const reads = openRequestReads(from);
      expect(await reads.entryOf(keys.other, ids.settled), label).toBeUndefined();
      expect(await reads.entryOf(keys.own, 'req_unknown'), label).toBeUndefined();
    }
  });
});
