/** The rows of PostgreSQL's key tables as the key store (keys.ts) reads and writes them. */

export interface TenantRecord {
  id: string;
  name: string;
  policy: string;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface KeyRecord {
  id: string;
  name: string;
  tenant_id: string | null;
  key_hash: string;
  prefix: string;
  created_at: number;
  updated_at: number;
  revoked_at: number | null;
  expires_at: number | null;
  rotated_at: number | null;
  throttled_at: number | null;
  throttle_reason: string | null;
  paused_owners: string | null;
  policy: string;
  metadata: string;
  version: number;
}

/** A key row's columns in the order of the store's INSERT (and the first 13 of its UPDATE). */
export function keyParams(row: KeyRecord): unknown[] {
  return [
    row.id,
    row.name,
    row.tenant_id,
    row.key_hash,
    row.prefix,
    row.created_at,
    row.updated_at,
    row.revoked_at,
    row.expires_at,
    row.rotated_at,
    row.policy,
    row.metadata,
    row.version,
  ];
}
