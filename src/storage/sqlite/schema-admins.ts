/**
 * Named admins and the audit trail in SQLite (re-exported by schema.ts, which
 * drizzle reads); the same tables as PostgreSQL's (src/storage/postgres/schema-admins.ts).
 * docs/admins.md says what they mean.
 */
import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** Named admins: the token is stored only as its SHA-256 and a visible prefix; revoked, never deleted. */
export const admins = sqliteTable(
  'admins',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    /** viewer | operator | admin */
    role: text('role').notNull(),
    /** SHA-256 of the whole token, hex. */
    tokenHash: text('token_hash').notNull(),
    /** `tga-` and 6 more characters, safe to show. */
    prefix: text('prefix').notNull(),
    createdAt: integer('created_at').notNull(),
    /** The audit trail's name of who created it. */
    createdBy: text('created_by').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [
    uniqueIndex('admins_hash_unique').on(t.tokenHash),
    // One active admin per name (revoked ones keep theirs for the trail).
    uniqueIndex('admins_active_name')
      .on(t.name)
      .where(sql`revoked_at IS NULL`),
  ],
);

/**
 * The audit trail: appended in the same transaction as the change it records,
 * never updated or deleted by Tollgate. `before`/`after` are JSON states
 * without secrets (src/domain/audit.ts).
 */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: integer('at').notNull(),
    /** admin | bootstrap | cli | system */
    actorKind: text('actor_kind').notNull(),
    actorName: text('actor_name').notNull(),
    action: text('action').notNull(),
    /** key | tenant | admin | tenant-token */
    targetKind: text('target_kind').notNull(),
    targetId: text('target_id').notNull(),
    targetName: text('target_name').notNull(),
    before: text('before'),
    after: text('after'),
  },
  (t) => [index('audit_log_at').on(t.at), index('audit_log_target').on(t.targetKind, t.targetId, t.id)],
);
