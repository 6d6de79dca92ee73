/** The audit trail in SQLite: appended inside the changing store's transaction, read in pages (src/storage/audit.ts). */
import type Database from 'better-sqlite3';
import { auditRecord, type AuditChange } from '../../domain/audit.js';
import { AUDIT_COLUMNS, auditPage, auditWhere, type AuditReads, type AuditRow } from '../audit.js';
import type { TollgateDatabase } from './open.js';

/** Appends one row; call it inside the transaction of the change it records. */
export function appendAudit(sqlite: Database.Database, change: AuditChange, at: number): void {
  const r = auditRecord(change, at);
  sqlite
    .prepare(
      `INSERT INTO audit_log (at, actor_kind, actor_name, action, target_kind, target_id, target_name, before, after)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(r.at, r.actorKind, r.actorName, r.action, r.targetKind, r.targetId, r.targetName, r.before, r.after);
}

export function sqliteAuditReads(database: TollgateDatabase): AuditReads {
  return {
    page: async (query) => {
      const { where, values, limit } = auditWhere(query, () => '?');
      const rows = database.sqlite.prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_log ${where} ORDER BY id DESC LIMIT ${limit}`).all(...values) as AuditRow[];
      return auditPage(rows, query.limit);
    },
  };
}
