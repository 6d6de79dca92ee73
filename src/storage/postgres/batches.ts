/**
 * Batch files and jobs in PostgreSQL (replicas, TOLLGATE_DATABASE_URL): the same store as SQLite's
 * (src/storage/sqlite/batches.ts), so every node sees which key owns a file or a batch. A claim picks
 * its jobs with `FOR UPDATE SKIP LOCKED`: processes claiming at once, on one node or several, each
 * take jobs the others did not lock, and none waits for another.
 *
 * PostgreSQL unreachable: 503 `ledger_unavailable`, never the node's own file, which does not know
 * the batches created through the other nodes.
 */
import { pgUnavailable } from '../../domain/errors.js';
import { isPgUnreachable, type PgPool } from './open.js';
import type { BatchFileRecord, BatchJobRecord, BatchProvider, BatchStore } from '../batches.js';

const FILE_COLUMNS = `id, key_id AS "keyId", created_at AS "createdAt", filename, bytes, lines, endpoint, model,
  prompt_tokens AS "promptTokens", completion_tokens AS "completionTokens", cost_micros AS "costMicros"`;

const JOB_COLUMNS = `id, provider, key_id AS "keyId", tenant_id AS "tenantId", request_id AS "requestId", node,
  created_at AS "createdAt", input_file_id AS "inputFileId", model, reserved_micros AS "reservedMicros", status,
  settled_at AS "settledAt"`;

/** Numbers as numbers, whatever the pool's type parsers (bigint arrives as a string from a plain pg pool). */
function fileRecord(row: BatchFileRecord): BatchFileRecord {
  return {
    ...row,
    createdAt: Number(row.createdAt),
    bytes: Number(row.bytes),
    lines: Number(row.lines),
    promptTokens: Number(row.promptTokens),
    completionTokens: Number(row.completionTokens),
    costMicros: Number(row.costMicros),
  };
}

function jobRecord(row: BatchJobRecord): BatchJobRecord {
  return {
    ...row,
    createdAt: Number(row.createdAt),
    reservedMicros: Number(row.reservedMicros),
    settledAt: row.settledAt === null ? null : Number(row.settledAt),
  };
}

/** Oldest first, as the claim promises (RETURNING keeps no order). */
function byAge(a: BatchJobRecord, b: BatchJobRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export class PostgresBatchStore implements BatchStore {
  private readonly pool: PgPool;

  constructor(pool: PgPool) {
    this.pool = pool;
  }

  /** The rows `text` answers, or "PostgreSQL did not answer" as a 503 (the driver's error stays the cause, for the log). */
  private async query<R extends object>(text: string, values: readonly unknown[]): Promise<{ rows: R[]; rowCount: number }> {
    try {
      const result = await this.pool.query<R>(text, values as unknown[]);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    } catch (error) {
      if (!isPgUnreachable(error)) throw error;
      throw pgUnavailable('Batches are kept in', error);
    }
  }

  async addFile(file: BatchFileRecord): Promise<void> {
    await this.query(
      `INSERT INTO batch_files (id, key_id, created_at, filename, bytes, lines, endpoint, model, prompt_tokens, completion_tokens, cost_micros)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
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
      ],
    );
  }

  async file(id: string): Promise<BatchFileRecord | undefined> {
    const { rows } = await this.query<BatchFileRecord>(`SELECT ${FILE_COLUMNS} FROM batch_files WHERE id = $1 AND deleted_at IS NULL`, [id]);
    return rows[0] === undefined ? undefined : fileRecord(rows[0]);
  }

  async deleteFile(id: string, at: number): Promise<void> {
    await this.query('UPDATE batch_files SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL', [at, id]);
  }

  async addJob(job: BatchJobRecord): Promise<void> {
    await this.query(
      `INSERT INTO batch_jobs (id, provider, key_id, tenant_id, request_id, node, created_at, input_file_id, model, reserved_micros, status, settled_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
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
      ],
    );
  }

  async job(id: string): Promise<BatchJobRecord | undefined> {
    const { rows } = await this.query<BatchJobRecord>(`SELECT ${JOB_COLUMNS} FROM batch_jobs WHERE id = $1 AND deleted_at IS NULL`, [id]);
    return rows[0] === undefined ? undefined : jobRecord(rows[0]);
  }

  async deleteJob(id: string, at: number): Promise<void> {
    await this.query('UPDATE batch_jobs SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL', [at, id]);
  }

  // Ids compare byte by byte (COLLATE "C"), as SQLite and JavaScript compare them, whatever the database's collation.
  async listJobs(keyId: string, provider: BatchProvider, options: { readonly after?: string | undefined; readonly limit: number }): Promise<BatchJobRecord[]> {
    const { rows } =
      options.after === undefined
        ? await this.query<BatchJobRecord>(
            `SELECT ${JOB_COLUMNS} FROM batch_jobs WHERE key_id = $1 AND provider = $2 AND deleted_at IS NULL
             ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $3`,
            [keyId, provider, options.limit],
          )
        : // The cursor row is looked up under the same key and provider, so another key's id opens nothing.
          await this.query<BatchJobRecord>(
            `SELECT ${JOB_COLUMNS} FROM batch_jobs, (SELECT created_at AS c, id AS i FROM batch_jobs WHERE id = $3 AND key_id = $1 AND provider = $2) after_job
             WHERE key_id = $1 AND provider = $2 AND deleted_at IS NULL
               AND (created_at < after_job.c OR (created_at = after_job.c AND id COLLATE "C" < after_job.i))
             ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4`,
            [keyId, provider, options.after, options.limit],
          );
    return rows.map(jobRecord);
  }

  async noteStatus(id: string, status: string): Promise<void> {
    await this.query('UPDATE batch_jobs SET status = $1 WHERE id = $2', [status, id]);
  }

  async claimUnsettled(node: string, holder: string, now: number, until: number, limit: number): Promise<BatchJobRecord[]> {
    const { rows } = await this.query<BatchJobRecord>(
      `UPDATE batch_jobs SET claimed_by = $1, claimed_until = $2
       WHERE id IN (
         SELECT id FROM batch_jobs WHERE node = $3 AND settled_at IS NULL AND (claimed_until <= $4 OR claimed_by = $1)
         ORDER BY created_at, id COLLATE "C" LIMIT $5
         FOR UPDATE SKIP LOCKED
       )
       RETURNING ${JOB_COLUMNS}`,
      [holder, until, node, now, limit],
    );
    return rows.map(jobRecord).sort(byAge);
  }

  async renew(ids: readonly string[], holder: string, until: number): Promise<void> {
    await this.query('UPDATE batch_jobs SET claimed_until = $1 WHERE id = ANY($2::text[]) AND claimed_by = $3 AND settled_at IS NULL', [until, ids, holder]);
  }

  async release(ids: readonly string[], holder: string): Promise<void> {
    await this.query('UPDATE batch_jobs SET claimed_by = NULL, claimed_until = 0 WHERE id = ANY($1::text[]) AND claimed_by = $2', [ids, holder]);
  }

  async markSettled(id: string, at: number): Promise<boolean> {
    const { rowCount } = await this.query('UPDATE batch_jobs SET settled_at = $1 WHERE id = $2 AND settled_at IS NULL', [at, id]);
    return rowCount === 1;
  }
}
