/** The rows of PostgreSQL's key tables as the key store (keys.ts) reads and writes them, and the views made of them. */
import type pg from 'pg';
import { keyStatusOf, suspensionFields, type KeyView, type TenantView } from '../../domain/keys.js';
import { runawayFields } from '../../domain/owner-pauses.js';
import { storedPolicy } from '../key-rules.js';

type Queryable = Pick<pg.PoolClient, 'query'>;

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
  suspended_at: number | null;
  suspended_by: string | null;
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

/** A key as people see it (its tenant's name read with `client`). */
export async function keyView(now: number, client: Queryable, row: KeyRecord): Promise<KeyView> {
  const tenant = row.tenant_id === null ? undefined : (await client.query<{ name: string }>('SELECT name FROM tenants WHERE id = $1', [row.tenant_id])).rows[0];
  return {
    id: row.id,
    name: row.name,
    tenantId: row.tenant_id,
    tenant: tenant?.name ?? null,
    prefix: row.prefix,
    status: keyStatusOf({ revokedAt: row.revoked_at, expiresAt: row.expires_at, suspendedAt: row.suspended_at }, now),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revokedAt: row.revoked_at,
    expiresAt: row.expires_at,
    rotatedAt: row.rotated_at,
    policy: storedPolicy(row.policy, `key ${row.name}`),
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    ...runawayFields(row.throttled_at, row.throttle_reason, row.paused_owners),
    ...suspensionFields(row.suspended_at, row.suspended_by),
  };
}

/** A tenant as people see it, with its count of active keys. */
export async function tenantView(client: Queryable, row: TenantRecord): Promise<TenantView> {
  const count = await client.query<{ n: number }>('SELECT count(*)::bigint AS n FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL', [row.id]);
  return {
    id: row.id,
    name: row.name,
    policy: storedPolicy(row.policy, `tenant ${row.name}`),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    keys: count.rows[0]?.n ?? 0,
  };
}
