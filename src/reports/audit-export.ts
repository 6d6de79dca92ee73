/**
 * The audit trail as a file (docs/admins.md): CSV with a header, or one JSON
 * object per line, read page by page so an export of any length takes a
 * bounded amount of memory. The same for the admin API and `tollgate audit`.
 */
import type { AuditEntry } from '../domain/audit.js';
import type { AuditPage } from '../storage/audit.js';
import { csvLine } from './export.js';

export type AuditFormat = 'csv' | 'ndjson';

const AUDIT_CSV_COLUMNS = ['id', 'at', 'actor_kind', 'actor', 'action', 'target_kind', 'target_id', 'target_name', 'before', 'after'] as const;

/** One row as the exports write it: times as ISO instants, states as JSON text. */
function auditRecordOf(entry: AuditEntry): Record<(typeof AUDIT_CSV_COLUMNS)[number], string | number | null> {
  return {
    id: entry.id,
    at: new Date(entry.at).toISOString(),
    actor_kind: entry.actor.kind,
    actor: entry.actor.name,
    action: entry.action,
    target_kind: entry.target.kind,
    target_id: entry.target.id,
    target_name: entry.target.name,
    before: entry.before === null ? null : JSON.stringify(entry.before),
    after: entry.after === null ? null : JSON.stringify(entry.after),
  };
}

function line(entry: AuditEntry, format: AuditFormat): string {
  if (format === 'ndjson') return `${JSON.stringify({ ...entry, at: new Date(entry.at).toISOString() })}\n`;
  const record = auditRecordOf(entry);
  return csvLine(AUDIT_CSV_COLUMNS.map((column) => record[column]));
}

/**
 * The whole export, from the first page (`read(undefined)`) through each
 * `nextCursor`. The first page is read before anything is yielded: an export
 * that cannot start fails before its first byte (src/reports/export.ts, textStream).
 */
export async function* auditExport(read: (cursor: string | undefined) => Promise<AuditPage>, format: AuditFormat): AsyncGenerator<string, void, undefined> {
  let page = await read(undefined);
  const lines = (p: AuditPage) => p.data.map((entry) => line(entry, format)).join('');
  yield (format === 'csv' ? csvLine([...AUDIT_CSV_COLUMNS]) : '') + lines(page);
  while (page.hasMore && page.nextCursor !== null) {
    page = await read(page.nextCursor);
    yield lines(page);
  }
}
