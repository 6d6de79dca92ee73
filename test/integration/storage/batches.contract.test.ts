/**
 * The batch store's contract (src/storage/batches.ts), over the SQLite file and PostgreSQL: files
 * and jobs found until deleted, a key's jobs listed newest first page by page and never another's,
 * and the claims that let exactly one process of the job's node follow it until it is settled once.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../../src/storage/backend.js';
import type { BatchFileRecord, BatchJobRecord, BatchStore } from '../../../src/storage/batches.js';
import { openBatchStore } from '../../../src/storage/index.js';
import { openPg, type PgPool } from '../../../src/storage/postgres/open.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { describeBackends } from '../../support/backends.js';

const NOW = Date.parse('2026-11-26T06:00:00Z');
const MINUTE = 60_000;

function batchFile(overrides: Partial<BatchFileRecord> = {}): BatchFileRecord {
  return {
    id: 'file-abc123',
    keyId: 'key_a',
    createdAt: NOW,
    filename: 'requests.jsonl',
    bytes: 12_345_678_901,
    lines: 250,
    endpoint: '/v1/chat/completions',
    model: 'gpt-4o-mini',
    promptTokens: 3_000_000_000,
    completionTokens: 1_500_000,
    costMicros: 9_007_199_254,
    ...overrides,
  };
}

function batchJob(overrides: Partial<BatchJobRecord> = {}): BatchJobRecord {
  return {
    id: 'batch_1',
    provider: 'openai',
    keyId: 'key_a',
    tenantId: 'tnt_acme',
    requestId: `req_${overrides.id ?? 'batch_1'}`,
    node: 'node-1',
    createdAt: NOW,
    inputFileId: 'file-abc123',
    model: 'gpt-4o-mini',
    reservedMicros: 5_000_000_000,
    status: 'validating',
    settledAt: null,
    ...overrides,
  };
}

/** A row as the database keeps it, deleted or not (the test looks under the interface). */
async function storedRow(backend: Backend, table: 'batch_files' | 'batch_jobs', id: string): Promise<Record<string, unknown> | undefined> {
  if (backend.kind === 'sqlite') return backend.database.sqlite.prepare(`SELECT * FROM ${table} WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
  return (await backend.pool.query<Record<string, unknown>>(`SELECT * FROM ${table} WHERE id = $1`, [id])).rows[0];
}

const ids = (jobs: readonly BatchJobRecord[]): string[] => jobs.map((job) => job.id);

describeBackends('batch store', (fixture) => {
  let backend: Backend;
  let store: BatchStore;
  /** A second process on the same store: its own SQLite connection to the file, or the shared pool. */
  let other: BatchStore;
  const closers: Array<() => void> = [];
  beforeEach(async () => {
    backend = await fixture.fresh();
    store = openBatchStore(backend);
    if (backend.kind === 'sqlite') {
      const second = openDatabase(backend.database.path);
      closers.push(() => second.close());
      other = openBatchStore({ kind: 'sqlite', database: second });
    } else {
      other = openBatchStore(backend);
    }
  });
  afterAll(() => {
    for (const close of closers.splice(0)) close();
  });

  describe('files', () => {
    it('finds a file as it was added, with its numbers as numbers, until it is deleted', async () => {
      const file = batchFile();
      await store.addFile(file);
      expect(await store.file(file.id)).toEqual(file);
      expect(await other.file(file.id)).toEqual(file);
      expect(await store.file('file-unknown')).toBeUndefined();
      await store.deleteFile(file.id, NOW + MINUTE);
      expect(await store.file(file.id)).toBeUndefined();
      expect(await storedRow(backend, 'batch_files', file.id)).toMatchObject({ deleted_at: NOW + MINUTE });
    });

    it('keeps the first deletion time when a file is deleted twice', async () => {
      await store.addFile(batchFile());
      await store.deleteFile('file-abc123', NOW + MINUTE);
      await store.deleteFile('file-abc123', NOW + 2 * MINUTE);
      await store.deleteFile('file-unknown', NOW + 2 * MINUTE);
      expect(await storedRow(backend, 'batch_files', 'file-abc123')).toMatchObject({ deleted_at: NOW + MINUTE });
    });
  });

  describe('jobs', () => {
    it('finds a job as it was added, OpenAI or Anthropic, until it is deleted', async () => {
      const openai = batchJob();
      const anthropic = batchJob({
        id: 'msgbatch_1',
        provider: 'anthropic',
        tenantId: null,
        inputFileId: null,
        model: 'claude-sonnet-4-5',
        status: 'in_progress',
      });
      await store.addJob(openai);
      await store.addJob(anthropic);
      expect(await store.job(openai.id)).toEqual(openai);
      expect(await other.job(anthropic.id)).toEqual(anthropic);
      expect(await store.job('batch_unknown')).toBeUndefined();
      await store.deleteJob(anthropic.id, NOW + MINUTE);
      expect(await store.job(anthropic.id)).toBeUndefined();
      expect(await storedRow(backend, 'batch_jobs', anthropic.id)).toMatchObject({ deleted_at: NOW + MINUTE });
      expect(await store.job(openai.id)).toEqual(openai);
    });

    it('notes the status the upstream reported last', async () => {
      await store.addJob(batchJob());
      await store.noteStatus('batch_1', 'in_progress');
      await other.noteStatus('batch_1', 'finalizing');
      expect(await store.job('batch_1')).toMatchObject({ status: 'finalizing', settledAt: null });
    });
  });

  describe('listing', () => {
    beforeEach(async () => {
      // Two pairs created in the same millisecond: the later id comes first.
      const created: Array<[string, number]> = [
        ['batch_a', NOW],
        ['batch_b', NOW + 1_000],
        ['batch_c', NOW + 1_000],
        ['batch_d', NOW + 2_000],
        ['batch_e', NOW + 3_000],
        ['batch_f', NOW + 3_000],
      ];
      for (const [id, createdAt] of created) await store.addJob(batchJob({ id, createdAt }));
      await store.addJob(batchJob({ id: 'msgbatch_a', provider: 'anthropic', inputFileId: null, createdAt: NOW + 1_500 }));
      await store.addJob(batchJob({ id: 'batch_other_key', keyId: 'key_b', createdAt: NOW + 1_500 }));
    });

    it("lists only the key's own jobs of the provider, newest first, then by id", async () => {
      expect(ids(await store.listJobs('key_a', 'openai', { limit: 100 }))).toEqual(['batch_f', 'batch_e', 'batch_d', 'batch_c', 'batch_b', 'batch_a']);
      expect(ids(await store.listJobs('key_a', 'anthropic', { limit: 100 }))).toEqual(['msgbatch_a']);
      expect(ids(await store.listJobs('key_b', 'openai', { limit: 100 }))).toEqual(['batch_other_key']);
      expect(await store.listJobs('key_c', 'openai', { limit: 100 })).toEqual([]);
    });

    it('pages by the last job of the previous page, at most limit each', async () => {
      const pages: string[][] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.listJobs('key_a', 'openai', { after, limit: 4 - pages.length });
        if (page.length === 0) break;
        pages.push(ids(page));
        after = page[page.length - 1]!.id;
      }
      expect(pages).toEqual([
        ['batch_f', 'batch_e', 'batch_d', 'batch_c'],
        ['batch_b', 'batch_a'],
      ]);
      expect(ids(await store.listJobs('key_a', 'openai', { after: 'batch_e', limit: 1 }))).toEqual(['batch_d']);
      expect((await store.listJobs('key_a', 'openai', { limit: 2 }))[0]).toEqual(batchJob({ id: 'batch_f', createdAt: NOW + 3_000 }));
    });

    it('leaves deleted jobs out, yet pages on from one', async () => {
      await store.deleteJob('batch_d', NOW + MINUTE);
      await store.deleteJob('batch_b', NOW + MINUTE);
      expect(ids(await store.listJobs('key_a', 'openai', { limit: 100 }))).toEqual(['batch_f', 'batch_e', 'batch_c', 'batch_a']);
      expect(ids(await store.listJobs('key_a', 'openai', { after: 'batch_d', limit: 100 }))).toEqual(['batch_c', 'batch_a']);
    });

    it("gives an empty page after an unknown cursor, another key's or another provider's job", async () => {
      for (const after of ['batch_unknown', 'batch_other_key', 'msgbatch_a']) {
        expect(await store.listJobs('key_a', 'openai', { after, limit: 100 }), after).toEqual([]);
      }
    });
  });

  describe('claims', () => {
    /** Jobs of node-1 created a minute apart, `count` of them: job_0 is the oldest. */
    async function addJobs(count: number, node = 'node-1'): Promise<string[]> {
      const added: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = `batch_${node}_${i}`;
        await store.addJob(batchJob({ id, node, createdAt: NOW + i * MINUTE }));
        added.push(id);
      }
      return added;
    }

    it("claims the node's lapsed and own-held jobs only, oldest first, never a settled one", async () => {
      const [heldByOther, heldBySelf, lapsedClaim, neverClaimed, settled] = await addJobs(5);
      const elsewhere = await addJobs(2, 'node-2');
      // Claims taken ten minutes ago, one job each (the oldest still free).
      const before = NOW - 10 * MINUTE;
      expect(ids(await store.claimUnsettled('node-1', 'proc-other', before, NOW + 10 * MINUTE, 1))).toEqual([heldByOther]);
      expect(ids(await other.claimUnsettled('node-1', 'proc-self', before, NOW + 5 * MINUTE, 1))).toEqual([heldBySelf]);
      expect(ids(await store.claimUnsettled('node-1', 'proc-gone', before, NOW - MINUTE, 1))).toEqual([lapsedClaim]);
      expect(await store.markSettled(settled!, before)).toBe(true);

      const claimed = await other.claimUnsettled('node-1', 'proc-self', NOW, NOW + 5 * MINUTE, 10);
      expect(ids(claimed)).toEqual([heldBySelf, lapsedClaim, neverClaimed]);
      expect(claimed[0]).toEqual(batchJob({ id: heldBySelf, createdAt: NOW + MINUTE }));
      expect(await store.claimUnsettled('node-1', 'proc-new', NOW + 1, NOW + 20 * MINUTE, 10)).toEqual([]);
      // proc-self's claims lapse at +5, proc-other's at +10: then every unsettled job is free.
      expect(ids(await store.claimUnsettled('node-1', 'proc-new', NOW + 5 * MINUTE, NOW + 20 * MINUTE, 10))).toEqual([heldBySelf, lapsedClaim, neverClaimed]);
      expect(ids(await store.claimUnsettled('node-1', 'proc-new', NOW + 10 * MINUTE, NOW + 20 * MINUTE, 10))).toEqual([
        heldByOther,
        heldBySelf,
        lapsedClaim,
        neverClaimed,
      ]);
      expect(ids(await store.claimUnsettled('node-2', 'proc-new', NOW, NOW + 20 * MINUTE, 10))).toEqual(elsewhere);
    });

    it('respects the limit and takes the oldest first', async () => {
      const jobs = await addJobs(5);
      // Added newest first too, so the order is the creation time's, not the insertion's.
      await store.addJob(batchJob({ id: 'batch_early', createdAt: NOW - MINUTE }));
      const first = await store.claimUnsettled('node-1', 'proc-1', NOW, NOW + MINUTE, 3);
      expect(ids(first)).toEqual(['batch_early', jobs[0], jobs[1]]);
      const second = await other.claimUnsettled('node-1', 'proc-2', NOW, NOW + MINUTE, 3);
      expect(ids(second)).toEqual([jobs[2], jobs[3], jobs[4]]);
      expect(await store.claimUnsettled('node-1', 'proc-3', NOW, NOW + MINUTE, 3)).toEqual([]);
    });

    it('never gives one job to two processes claiming at once', async () => {
      const jobs = await addJobs(12);
      for (let round = 0; round < 4; round++) {
        const now = NOW + round * 10 * MINUTE;
        const [a, b] = await Promise.all([
          store.claimUnsettled('node-1', `proc-a-${round}`, now, now + 5 * MINUTE, 7),
          other.claimUnsettled('node-1', `proc-b-${round}`, now, now + 5 * MINUTE, 7),
        ]);
        const both = [...ids(a), ...ids(b)];
        expect(new Set(both).size, `round ${round}`).toBe(both.length);
        expect(a.length).toBeLessThanOrEqual(7);
        expect(b.length).toBeLessThanOrEqual(7);
        // The first to commit takes 7; the other takes what is left of the 12 (fewer if it skipped locked ones).
        expect(Math.max(a.length, b.length)).toBe(7);
        for (const id of both) expect(jobs).toContain(id);
      }
    });

    it("renews only the holder's own claims", async () => {
      const [mine, theirs] = await addJobs(2);
      expect(ids(await store.claimUnsettled('node-1', 'proc-1', NOW, NOW + MINUTE, 1))).toEqual([mine]);
      expect(ids(await other.claimUnsettled('node-1', 'proc-2', NOW, NOW + MINUTE, 1))).toEqual([theirs]);
      await store.renew([mine!, theirs!, 'batch_unknown'], 'proc-1', NOW + 10 * MINUTE);
      // proc-2's claim lapsed at +1 (not extended); proc-1's holds until +10.
      expect(ids(await store.claimUnsettled('node-1', 'proc-3', NOW + 5 * MINUTE, NOW + 20 * MINUTE, 10))).toEqual([theirs]);
      expect(ids(await store.claimUnsettled('node-1', 'proc-4', NOW + 10 * MINUTE, NOW + 20 * MINUTE, 10))).toEqual([mine]);
    });

    it('release makes the holder’s jobs claimable at once, and nobody else’s', async () => {
      const [a, b] = await addJobs(2);
      expect(ids(await store.claimUnsettled('node-1', 'proc-1', NOW, NOW + 10 * MINUTE, 10))).toEqual([a, b]);
      await other.release([a!, b!], 'proc-2');
      expect(await other.claimUnsettled('node-1', 'proc-2', NOW + 1, NOW + 10 * MINUTE, 10)).toEqual([]);
      await store.release([a!], 'proc-1');
      expect(ids(await other.claimUnsettled('node-1', 'proc-2', NOW + 1, NOW + 10 * MINUTE, 10))).toEqual([a]);
      // Released, proc-1's claim on `a` is gone: it claims `b` (its own) and not `a` (now proc-2's).
      expect(ids(await store.claimUnsettled('node-1', 'proc-1', NOW + 2, NOW + 10 * MINUTE, 10))).toEqual([b]);
    });

    it('settles a job exactly once, and never claims a settled one again', async () => {
      const [job] = await addJobs(1);
      expect(ids(await store.claimUnsettled('node-1', 'proc-1', NOW, NOW + MINUTE, 10))).toEqual([job]);
      const settled = await Promise.all([store.markSettled(job!, NOW + 1), other.markSettled(job!, NOW + 2)]);
      expect(settled.filter(Boolean)).toHaveLength(1);
      expect(await store.markSettled(job!, NOW + 3)).toBe(false);
      expect(await store.markSettled('batch_unknown', NOW + 3)).toBe(false);
      expect((await store.job(job!))?.settledAt).toBe(settled[0] ? NOW + 1 : NOW + 2);
      expect(await store.claimUnsettled('node-1', 'proc-1', NOW + 1, NOW + MINUTE, 10)).toEqual([]);
      expect(await other.claimUnsettled('node-1', 'proc-2', NOW + 10 * MINUTE, NOW + 20 * MINUTE, 10)).toEqual([]);
      await store.renew([job!], 'proc-1', NOW + 30 * MINUTE);
      await store.release([job!], 'proc-1');
      expect(await other.claimUnsettled('node-1', 'proc-2', NOW + 40 * MINUTE, NOW + 50 * MINUTE, 10)).toEqual([]);
    });

    it('still claims a deleted job until it is settled', async () => {
      const [job] = await addJobs(1);
      await store.deleteJob(job!, NOW);
      expect(ids(await store.claimUnsettled('node-1', 'proc-1', NOW, NOW + MINUTE, 10))).toEqual([job]);
      expect(await store.markSettled(job!, NOW + 1)).toBe(true);
    });
  });
});

describe('batch store with PostgreSQL unreachable', () => {
  let pool: PgPool;
  beforeAll(() => {
    // A port nothing listens on: the connection is refused at once.
    pool = openPg('postgres://postgres:hunter2-secret@127.0.0.1:1/tollgate', { connectTimeoutMs: 1000 });
  });
  afterAll(async () => {
    await pool.end();
  });

  it('answers every operation with a 503 ledger_unavailable that names PostgreSQL and no secret', async () => {
    const store = openBatchStore({ kind: 'postgres', pool });
    const attempts: Array<Promise<unknown>> = [
      store.addFile(batchFile()),
      store.file('file-abc123'),
      store.deleteFile('file-abc123', NOW),
      store.addJob(batchJob()),
      store.job('batch_1'),
      store.deleteJob('batch_1', NOW),
      store.listJobs('key_a', 'openai', { limit: 20 }),
      store.noteStatus('batch_1', 'completed'),
      store.claimUnsettled('node-1', 'proc-1', NOW, NOW + MINUTE, 10),
      store.renew(['batch_1'], 'proc-1', NOW),
      store.release(['batch_1'], 'proc-1'),
      store.markSettled('batch_1', NOW),
    ];
    for (const attempt of attempts) {
      const error = (await attempt.catch((caught: unknown) => caught)) as { code: string; status: number; message: string };
      expect(error).toMatchObject({ code: 'ledger_unavailable', status: 503 });
      expect(error.message).toContain('PostgreSQL');
      expect(error.message).not.toContain('hunter2');
    }
  });
});
