/** The dashboard's key directory (../directory.ts) read from a node's SQLite file. */
import type Database from 'better-sqlite3';
import { DirectoryCache, KEY_VERSIONS_SQL, type Directory, type StoredKeyRow, type StoredTenantRow } from '../directory.js';

/** Reads the directory from SQLite, keeping the last one while no key or tenant changed. */
export class DirectoryReader {
  private readonly statements;
  private readonly cache = new DirectoryCache();

  constructor(sqlite: Database.Database) {
    this.statements = {
      versions: sqlite.prepare(KEY_VERSIONS_SQL),
      keys: sqlite.prepare(
        `SELECT k.id, k.name, k.tenant_id AS tenantId, t.name AS tenant, k.prefix, k.created_at AS createdAt,
           k.revoked_at AS revokedAt, k.expires_at AS expiresAt, k.suspended_at AS suspendedAt, k.policy
         FROM api_keys k LEFT JOIN tenants t ON t.id = k.tenant_id ORDER BY k.name, k.created_at`,
      ),
      tenants: sqlite.prepare('SELECT id, name, policy FROM tenants ORDER BY name'),
    };
  }

  /** Every key and tenant with parsed policies. */
  read(): Directory {
    const versions = this.statements.versions.get() as { keys: number; tenants: number };
    const signature = `${versions.keys}:${versions.tenants}`;
    return (
      this.cache.current(signature) ??
      this.cache.build(signature, this.statements.keys.all() as StoredKeyRow[], this.statements.tenants.all() as StoredTenantRow[])
    );
  }
}
