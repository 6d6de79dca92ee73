/** The audit trail in PostgreSQL, every node's: appended inside the changing store's transaction, read in pages (src/storage/audit.ts). */
import type pg from 'pg';
import { auditRecord, type AuditChange } from '../../domain/audit.js';
import { pgUnavailable } from '../../domain/errors.js';
import { AUDIT_COLUMNS, auditPage, auditWhere, type AuditReads, type AuditRow } from '../audit.js';
import { isPgUnreachable, type PgPool } from './open.js';

/** Appends one row; call it with the transaction's client of the change it records. */
export async function appendAudit(client: Pick<pg.PoolClient, 'query'>, change: AuditChange, at: number): Promise<void> {
  const r = auditRecord(change, at);
  await client.query(
    `INSERT INTO audit_log (at, actor_kind, actor_name, action, target_kind, target_id, target_name, before, after)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [r.at, r.actorKind, r.actorName, r.action, r.targetKind, r.targetId, r.targetName, r.before, r.after],
  );
}

export function pgAuditReads(pool: PgPool): AuditReads {
  return {
    page: async (query) => {
      const { where, values, limit } = auditWhere(query, (n) => `$${n}`);
      try {
        const rows = (await pool.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_log ${where} ORDER BY id DESC LIMIT ${limit}`, values)).rows;
        return auditPage(rows, query.limit);
      } catch (error) {
        if (!isPgUnreachable(error)) throw error;
        throw pgUnavailable('The audit trail is kept in', error);
      }
    },
  };
}
