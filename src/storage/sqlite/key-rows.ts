/** Key rows of the node's SQLite file as the key store (keys.ts) resolves them and the proxy's key cache reads them. */
import { and, eq, isNull } from 'drizzle-orm';
import { TollgateError } from '../../domain/errors.js';
import type { AuthKey } from '../../domain/keys.js';
import { runawayFields } from '../../domain/owner-pauses.js';
import { readStoredPolicy } from '../../domain/policy-json.js';
import type { TollgateDatabase } from './open.js';
import { apiKeys, type ApiKeyRow } from './schema.js';

type Db = TollgateDatabase['db'];

/** Resolves a reference (id, visible prefix, or name) to one key, or explains why not. */
export function requireKeyRow(db: Db, ref: string): ApiKeyRow {
  const text = ref.trim();
  const byId = db.select().from(apiKeys).where(eq(apiKeys.id, text)).get();
  if (byId !== undefined) return byId;
  const byPrefix = db.select().from(apiKeys).where(eq(apiKeys.prefix, text)).all();
  if (byPrefix.length === 1) return byPrefix[0]!;
  if (byPrefix.length > 1) {
    throw new TollgateError('ambiguous_reference', `prefix ${text} matches several keys (${byPrefix.map((r) => r.id).join(', ')}); use an id`);
  }
  const live = liveKeyNamed(db, text);
  if (live !== undefined) return live;
  const revoked = db.select().from(apiKeys).where(eq(apiKeys.name, text)).all();
  if (revoked.length === 1) return revoked[0]!;
  if (revoked.length > 1) {
    throw new TollgateError('ambiguous_reference', `several revoked keys are named "${text}" (${revoked.map((r) => r.id).join(', ')}); use an id`);
  }
  throw new TollgateError('not_found', `no key "${text}" (give its id, name or prefix)`);
}

export function liveKeyNamed(db: Db, name: string): ApiKeyRow | undefined {
  return db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.name, name), isNull(apiKeys.revokedAt)))
    .get();
}

export function toAuthKey(row: ApiKeyRow): AuthKey {
  return {
    id: row.id,
    name: row.name,
    keyHash: row.keyHash,
    tenantId: row.tenantId,
    revokedAt: row.revokedAt,
    expiresAt: row.expiresAt,
    policy: readStoredPolicy(row.policy),
    version: row.version,
    ...runawayFields(row.throttledAt, row.throttleReason, row.pausedOwners),
    ...(row.suspendedAt === null ? {} : { suspendedAt: row.suspendedAt }),
  };
}
