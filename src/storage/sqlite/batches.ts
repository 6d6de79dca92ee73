/**
 * Batch files and jobs in the node's SQLite file (one host, or `--db`): the BatchStore of
 * src/storage/batches.ts. Several processes may share the file, so a claim is one
 * `UPDATE … RETURNING` statement: SQLite runs it under the file's write lock, and no other
 * process sees the jobs between the choice and the claim.
 */
import type Database from 'better-sqlite3';
import type { TollgateDatabase } from './open.js';
import type { BatchFileRecord, BatchJobRecord, BatchProvider, BatchStore } from '../batches.js';

const FILE_COLUMNS = `id, key_id AS keyId, created_at AS createdAt, filename, bytes, lines, endpoint, model,
  prompt_tokens AS promptTokens, completion_tokens AS completionTokens, cost_micros AS costMicros`;

const JOB_COLUMNS = `id, provider, key_id AS keyId, tenant_id AS tenantId, request_id AS requestId, node,
  created_at AS createdAt, input_file_id AS inputFileId, model, reserved_micros AS reservedMicros, status,
  settled_at AS settledAt`;

/** Oldest first, as the claim promises (RETURNING keeps no order). */
function byAge(a: BatchJobRecord, b: BatchJobRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export class SqliteBatchStore implements BatchStore {
  private readonly sqlite: Database.Database;

  constructor(database: TollgateDatabase) {
    this.sqlite = database.sqlite;
  }

  async addFile(file: BatchFileRecord): Promise<void> {
    this.sqlite
      .prepare(
        `INSERT INTO batch_files (id, key_id, created_at, filename, bytes, lines, endpoint, model, prompt_tokens, completion_tokens, cost_micros)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        file.id,
        file.keyId,
        file.createdAt,
        file.filename,
        file.bytes,
        file.lines,
        file.endpoint,
        file.model,
        file.promptTokens,
        file.completionTokens,
        file.costMicros,
      );
  }

  async file(id: string): Promise<BatchFileRecord | undefined> {
    return this.sqlite.prepare(`SELECT ${FILE_COLUMNS} FROM batch_files WHERE id = ? AND deleted_at IS NULL`).get(id) as BatchFileRecord | undefined;
  }

  async deleteFile(id: string, at: number): Promise<void> {
    this.sqlite.prepare('UPDATE batch_files SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL').run(at, id);
  }

  async addJob(job: BatchJobRecord): Promise<void> {
    this.sqlite
      .prepare(
        `INSERT INTO batch_jobs (id, provider, key_id, tenant_id, request_id, node, created_at, input_file_id, model, reserved_micros, status, settled_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        job.id,
        job.provider,
        job.keyId,
        job.tenantId,
        job.requestId,
        job.node,
        job.createdAt,
        job.inputFileId,
        job.model,
        job.reservedMicros,
        job.status,
        job.settledAt,
      );
  }

  async job(id: string): Promise<BatchJobRecord | undefined> {
    return this.sqlite.prepare(`SELECT ${JOB_COLUMNS} FROM batch_jobs WHERE id = ? AND deleted_at IS NULL`).get(id) as BatchJobRecord | undefined;
  }

  async deleteJob(id: string, at: number): Promise<void> {
    this.sqlite.prepare('UPDATE batch_jobs SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL').run(at, id);
  }

  async listJobs(keyId: string, provider: BatchProvider, options: { readonly after?: string | undefined; readonly limit: number }): Promise<BatchJobRecord[]> {
    if (options.after === undefined) {
      return this.sqlite
        .prepare(
          `SELECT ${JOB_COLUMNS} FROM batch_jobs WHERE key_id = ? AND provider = ? AND deleted_at IS NULL
           ORDER BY created_at DESC, id DESC LIMIT ?`,
        )
        .all(keyId, provider, options.limit) as BatchJobRecord[];
    }
    // The cursor row is looked up under the same key and provider, so another key's id opens nothing.
    return this.sqlite
      .prepare(
        `SELECT ${JOB_COLUMNS} FROM batch_jobs j, (SELECT created_at AS c, id AS i FROM batch_jobs WHERE id = ? AND key_id = ? AND provider = ?) after_job
         WHERE j.key_id = ? AND j.provider = ? AND j.deleted_at IS NULL AND (j.created_at < after_job.c OR (j.created_at = after_job.c AND j.id < after_job.i))
         ORDER BY j.created_at DESC, j.id DESC LIMIT ?`,
      )
      .all(options.after, keyId, provider, keyId, provider, options.limit) as BatchJobRecord[];
  }

  async noteStatus(id: string, status: string): Promise<void> {
    this.sqlite.prepare('UPDATE batch_jobs SET status = ? WHERE id = ?').run(status, id);
  }

  async claimUnsettled(node: string, holder: string, now: number, until: number, limit: number): Promise<BatchJobRecord[]> {
    const claimed = this.sqlite
      .prepare(
        `UPDATE batch_jobs SET claimed_by = ?, claimed_until = ?
         WHERE id IN (
           SELECT id FROM batch_jobs WHERE node = ? AND settled_at IS NULL AND (claimed_until <= ? OR claimed_by = ?)
           ORDER BY created_at, id LIMIT ?
         )
         RETURNING ${JOB_COLUMNS}`,
      )
      .all(holder, until, node, now, holder, limit) as BatchJobRecord[];
    return claimed.sort(byAge);
  }

  async renew(ids: readonly string[], holder: string, until: number): Promise<void> {
    this.sqlite
      .prepare('UPDATE batch_jobs SET claimed_until = ? WHERE id IN (SELECT value FROM json_each(?)) AND claimed_by = ? AND settled_at IS NULL')
      .run(until, JSON.stringify(ids), holder);
  }

  async release(ids: readonly string[], holder: string): Promise<void> {
    this.sqlite
      .prepare('UPDATE batch_jobs SET claimed_by = NULL, claimed_until = 0 WHERE id IN (SELECT value FROM json_each(?)) AND claimed_by = ?')
      .run(JSON.stringify(ids), holder);
  }

  async markSettled(id: string, at: number): Promise<boolean> {
    return this.sqlite.prepare('UPDATE batch_jobs SET settled_at = ? WHERE id = ? AND settled_at IS NULL').run(at, id).changes === 1;
  }
}
