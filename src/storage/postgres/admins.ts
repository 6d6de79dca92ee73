/**
 * Named admins in PostgreSQL (replicas): the same store as the SQLite one
 * (src/storage/sqlite/admins.ts), so an admin created anywhere works on every
 * node, and a revocation stops its token and sessions on every node at their
 * next request (nothing is cached: each admin request reads its admin once,
 * by an indexed column). PostgreSQL unreachable: 503 `ledger_unavailable`.
 */
import type pg from 'pg';
import type { PgPool } from './open.js';
import { answeredByPg, lockedWrite } from './locked-write.js';
import type { AdminStore } from '../admins.js';
import { adminActor, adminChange, adminView, hashAdminToken, nameTaken, newAdminRecord, onlyAdmin, type AdminRow } from '../admin-rules.js';
import { appendAudit } from './audit.js';

const SELECT = `SELECT id, name, role, prefix, created_at AS "createdAt", created_by AS "createdBy", revoked_at AS "revokedAt" FROM admins`;
/** "tollgate-admins" as a lock id: admin writes are serialized, so the active-name check holds. */
const ADMINS_LOCK = '7813575385137752001';

type Queryable = Pick<pg.PoolClient, 'query'>;

export function pgAdmins(pool: PgPool): AdminStore {
  const answered = <T>(fn: () => Promise<T>): Promise<T> => answeredByPg('Admins are kept in', fn);
  const write = <T>(fn: (client: Queryable) => Promise<T>): Promise<T> => lockedWrite(pool, ADMINS_LOCK, 'Admins are kept in', fn);
  return {
    create: async (input, now, actor) => {
      const { token, record } = newAdminRecord(input, now, actor);
      await write(async (client) => {
        if ((await client.query('SELECT 1 FROM admins WHERE name = $1 AND revoked_at IS NULL', [record.name])).rows.length > 0) throw nameTaken(record.name);
        await client.query('INSERT INTO admins (id, name, role, token_hash, prefix, created_at, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
          record.id,
          record.name,
          record.role,
          record.tokenHash,
          record.prefix,
          record.createdAt,
          record.createdBy,
        ]);
        await appendAudit(client, adminChange(actor, 'admin.create', null, record), now);
      });
      const { tokenHash: _hash, ...row } = record;
      return { token, view: adminView(row) };
    },
    list: async () => answered(async () => (await pool.query<AdminRow>(`${SELECT} ORDER BY revoked_at IS NOT NULL, name, created_at`)).rows.map(adminView)),
    revoke: async (ref, now, actor) =>
      write(async (client) => {
        const row = onlyAdmin((await client.query<AdminRow>(`${SELECT} WHERE id = $1 OR name = $1`, [ref])).rows, ref);
        if (row.revokedAt !== null) return adminView(row);
        await client.query('UPDATE admins SET revoked_at = $2 WHERE id = $1', [row.id, now]);
        const revoked = { ...row, revokedAt: now };
        await appendAudit(client, adminChange(actor, 'admin.revoke', row, revoked), now);
        return adminView(revoked);
      }),
    activeAdmin: async (by) =>
      answered(async () => {
        const [row] =
          'secret' in by
            ? (await pool.query<AdminRow>(`${SELECT} WHERE token_hash = $1`, [hashAdminToken(by.secret)])).rows
            : (await pool.query<AdminRow>(`${SELECT} WHERE id = $1`, [by.adminId])).rows;
        return adminActor(row);
      }),
  };
}
