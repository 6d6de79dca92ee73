/**
 * The audit trail as it is read (docs/admins.md): newest first, in pages,
 * filtered by target, time, actor and action. Rows are appended only by the
 * stores whose changes they record, inside the same transaction
 * (src/storage/sqlite/audit.ts, src/storage/postgres/audit.ts); nothing
 * updates or deletes them, and this interface has no way to.
 */
import type { AuditAction, AuditEntry, AuditTargetKind } from '../domain/audit.js';
import { TollgateError } from '../domain/errors.js';

export interface AuditQuery {
  readonly targetKind?: AuditTargetKind | undefined;
  readonly targetId?: string | undefined;
  /** From this time on (ms, inclusive). */
  readonly since?: number | undefined;
  /** Before this time (ms, exclusive). */
  readonly until?: number | undefined;
  /** The actor's name as the trail writes it (`alice`, `bootstrap`, `cli:bob`). */
  readonly actor?: string | undefined;
  readonly action?: AuditAction | undefined;
  /** Rows of the page. */
  readonly limit: number;
  /** The previous page's `nextCursor`. */
  readonly cursor?: string | undefined;
}

export interface AuditPage {
  readonly data: AuditEntry[];
  readonly hasMore: boolean;
  /** Pass as `cursor` for the next (older) page; null on the last. */
  readonly nextCursor: string | null;
}

export interface AuditReads {
  page(query: AuditQuery): Promise<AuditPage>;
}

export const DEFAULT_AUDIT_PAGE = 100;
export const MAX_AUDIT_PAGE = 1000;

/** A row as both stores select it. */
export interface AuditRow {
  id: number | string;
  at: number | string;
  actorKind: string;
  actorName: string;
  action: string;
  targetKind: string;
  targetId: string;
  targetName: string;
  before: string | null;
  after: string | null;
}

/**
 * The WHERE clause and values of a query, for either SQL dialect
 * (`placeholder(n)`: `?` or `$n`). Asks for one row more than the page, to
 * know whether there is another.
 */
export function auditWhere(query: AuditQuery, placeholder: (n: number) => string): { where: string; values: unknown[]; limit: number } {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    values.push(value);
    clauses.push(clause.replace('?', placeholder(values.length)));
  };
  if (query.targetKind !== undefined) add('target_kind = ?', query.targetKind);
  if (query.targetId !== undefined) add('target_id = ?', query.targetId);
  if (query.since !== undefined) add('at >= ?', query.since);
  if (query.until !== undefined) add('at < ?', query.until);
  if (query.actor !== undefined) add('actor_name = ?', query.actor);
  if (query.action !== undefined) add('action = ?', query.action);
  if (query.cursor !== undefined) add('id < ?', cursorId(query.cursor));
  return { where: clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`, values, limit: query.limit + 1 };
}

function cursorId(cursor: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(cursor)) throw new TollgateError('invalid_value', 'cursor is not one this API gave', { param: 'cursor' });
  return Number(cursor);
}

export const AUDIT_COLUMNS =
  'id, at, actor_kind AS "actorKind", actor_name AS "actorName", action, target_kind AS "targetKind", target_id AS "targetId", target_name AS "targetName", before, after';

/** The page of `limit + 1` rows read. */
export function auditPage(rows: readonly AuditRow[], limit: number): AuditPage {
  const data = rows.slice(0, limit).map((row): AuditEntry => ({
    id: Number(row.id),
    at: Number(row.at),
    actor: { kind: row.actorKind as AuditEntry['actor']['kind'], name: row.actorName },
    action: row.action as AuditAction,
    target: { kind: row.targetKind as AuditTargetKind, id: row.targetId, name: row.targetName },
    before: row.before === null ? null : (JSON.parse(row.before) as AuditEntry['before']),
    after: row.after === null ? null : (JSON.parse(row.after) as AuditEntry['after']),
  }));
  const hasMore = rows.length > limit;
  return { data, hasMore, nextCursor: hasMore ? String(data[data.length - 1]!.id) : null };
}
