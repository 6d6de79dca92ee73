/** Named admins in the node's SQLite file (one host, or `--db`): the AdminStore of src/storage/admins.ts. */
import type { TollgateDatabase } from './open.js';
import type { AdminStore } from '../admins.js';
import { adminActor, adminChange, adminView, hashAdminToken, nameTaken, newAdminRecord, onlyAdmin, type AdminRow } from '../admin-rules.js';
import { appendAudit } from './audit.js';

const SELECT = `SELECT id, name, role, prefix, created_at AS createdAt, created_by AS createdBy, revoked_at AS revokedAt FROM admins`;

export function sqliteAdmins(database: TollgateDatabase): AdminStore {
  const sqlite = database.sqlite;
  const write = <T>(fn: () => T): T => sqlite.transaction(fn).immediate();
  const byRef = (ref: string): AdminRow => onlyAdmin(sqlite.prepare(`${SELECT} WHERE id = ? OR name = ?`).all(ref, ref) as AdminRow[], ref);
  return {
    create: async (input, now, actor) => {
      const { token, record } = newAdminRecord(input, now, actor);
      write(() => {
        if (sqlite.prepare('SELECT 1 FROM admins WHERE name = ? AND revoked_at IS NULL').get(record.name) !== undefined) throw nameTaken(record.name);
        sqlite
          .prepare('INSERT INTO admins (id, name, role, token_hash, prefix, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(record.id, record.name, record.role, record.tokenHash, record.prefix, record.createdAt, record.createdBy);
        appendAudit(sqlite, adminChange(actor, 'admin.create', null, record), now);
      });
      const { tokenHash: _hash, ...row } = record;
      return { token, view: adminView(row) };
    },
    list: async () => (sqlite.prepare(`${SELECT} ORDER BY revoked_at IS NOT NULL, name, created_at`).all() as AdminRow[]).map(adminView),
    revoke: async (ref, now, actor) =>
      write(() => {
        const row = byRef(ref);
        if (row.revokedAt !== null) return adminView(row);
        sqlite.prepare('UPDATE admins SET revoked_at = ? WHERE id = ?').run(now, row.id);
        const revoked = { ...row, revokedAt: now };
        appendAudit(sqlite, adminChange(actor, 'admin.revoke', row, revoked), now);
        return adminView(revoked);
      }),
    activeAdmin: async (by) => {
      const row = (
        'secret' in by
          ? sqlite.prepare(`${SELECT} WHERE token_hash = ?`).get(hashAdminToken(by.secret))
          : sqlite.prepare(`${SELECT} WHERE id = ?`).get(by.adminId)
      ) as AdminRow | undefined;
      return adminActor(row);
    },
  };
}
