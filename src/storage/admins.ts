/**
 * Named admins (docs/admins.md): `tga-` + 32 random bytes in base62, shown
 * once; the store keeps only the SHA-256 and a visible prefix (table
 * `admins`), as for keys (key-format.ts). An admin is revoked, never deleted:
 * the audit trail names it. Every request of an admin token or session looks
 * the admin up, so a revocation (or a revoked admin's session) stops working
 * at the next request on every node.
 *
 * One interface, two stores: the node's SQLite file
 * (src/storage/sqlite/admins.ts) or PostgreSQL on replicas
 * (src/storage/postgres/admins.ts). Creating and revoking append their audit
 * row in the same transaction.
 */
import type { Actor, AdminRole } from '../domain/admins.js';

/** An admin as people see it (never its token or hash). */
export interface AdminView {
  readonly id: string;
  readonly name: string;
  readonly role: AdminRole;
  /** `tga-` and 6 more characters. */
  readonly prefix: string;
  readonly createdAt: number;
  /** Who created it (the audit trail's name of the actor). */
  readonly createdBy: string;
  readonly revokedAt: number | null;
  readonly status: 'active' | 'revoked';
}

export interface NewAdmin {
  readonly name: string;
  readonly role: AdminRole;
}

/** A login or bearer token (by the secret), or a session's request (by the admin id its cookie names). */
type AdminLookup = { readonly secret: string } | { readonly adminId: string };

export interface AdminStore {
  /** Creates an admin; the token is in the answer and nowhere else. A name is unique among active admins. */
  create(input: NewAdmin, now: number, actor: Actor): Promise<{ token: string; view: AdminView }>;
  /** Every admin, active first, by name. */
  list(): Promise<AdminView[]>;
  /** Revokes by id or name (an active one first): its token and sessions stop at their next request. Twice changes nothing. */
  revoke(ref: string, now: number, actor: Actor): Promise<AdminView>;
  /** The actor an active admin's token or session is (undefined: unknown or revoked). */
  activeAdmin(by: AdminLookup): Promise<Extract<Actor, { kind: 'admin' }> | undefined>;
}
