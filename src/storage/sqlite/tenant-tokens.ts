/** Dashboard tokens in the node's SQLite file (one host, or `--db`): the DashboardTokenStore of src/storage/tenant-tokens.ts. */
import type { TollgateDatabase } from './open.js';
import type { DashboardTokenStore } from '../tenant-tokens.js';
import {
  activeViewerOf,
  hashDashboardToken,
  issuedView,
  newTokenRecord,
  noSuchTenant,
  onlyToken,
  tokenChange,
  tokenView,
  type DashboardTokenRow,
} from '../token-rules.js';
import { SYSTEM_ACTOR } from '../../domain/admins.js';
import { appendAudit } from './audit.js';

const SELECT = `SELECT d.id, d.tenant_id AS tenantId, t.name AS tenant, d.prefix, d.label, d.created_at AS createdAt,
  d.expires_at AS expiresAt, d.revoked_at AS revokedAt FROM dashboard_tokens d JOIN tenants t ON t.id = d.tenant_id`;

export function sqliteDashboardTokens(database: TollgateDatabase): DashboardTokenStore {
  const sqlite = database.sqlite;
  const write = <T>(fn: () => T): T => sqlite.transaction(fn).immediate();
  const tenantOf = (ref: string): { id: string; name: string } => {
    const row = sqlite.prepare('SELECT id, name FROM tenants WHERE id = ? OR name = ?').get(ref, ref) as { id: string; name: string } | undefined;
    if (row === undefined) throw noSuchTenant(ref);
    return row;
  };
  const byRef = (ref: string): DashboardTokenRow =>
    onlyToken(sqlite.prepare(`${SELECT} WHERE d.id = ? OR d.prefix = ?`).all(ref, ref) as DashboardTokenRow[], ref);
  return {
    create: async (input, now, actor = SYSTEM_ACTOR) => {
      const tenant = tenantOf(input.tenant);
      const { token, record } = newTokenRecord(input, now);
      const view = issuedView(record, tenant, now);
      write(() => {
        sqlite
          .prepare('INSERT INTO dashboard_tokens (id, tenant_id, token_hash, prefix, label, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(record.id, tenant.id, record.tokenHash, record.prefix, record.label, now, record.expiresAt);
        appendAudit(sqlite, tokenChange(actor, 'tenant-token.create', null, view), now);
      });
      return { token, view };
    },
    list: async (options, now) => {
      const rows =
        options.tenant === undefined
          ? (sqlite.prepare(`${SELECT} ORDER BY d.created_at DESC, d.id`).all() as DashboardTokenRow[])
          : (sqlite.prepare(`${SELECT} WHERE d.tenant_id = ? ORDER BY d.created_at DESC, d.id`).all(tenantOf(options.tenant).id) as DashboardTokenRow[]);
      return rows.map((row) => tokenView(row, now));
    },
    revoke: async (ref, now, actor = SYSTEM_ACTOR) =>
      write(() => {
        const token = byRef(ref);
        if (token.revokedAt !== null) return tokenView(token, now);
        sqlite.prepare('UPDATE dashboard_tokens SET revoked_at = ? WHERE id = ?').run(now, token.id);
        const revoked = tokenView(byRef(token.id), now);
        appendAudit(sqlite, tokenChange(actor, 'tenant-token.revoke', tokenView(token, now), revoked), now);
        return revoked;
      }),
    activeViewer: async (by, now) => {
      const row = (
        'secret' in by
          ? sqlite.prepare(`${SELECT} WHERE d.token_hash = ?`).get(hashDashboardToken(by.secret))
          : sqlite.prepare(`${SELECT} WHERE d.id = ?`).get(by.tokenId)
      ) as DashboardTokenRow | undefined;
      return activeViewerOf(row, now);
    },
  };
}
