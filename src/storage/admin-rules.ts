/**
 * What an admin token is, what a valid new admin is and what a stored row
 * means, once for both stores (src/storage/admins.ts). Pure but for the
 * random token.
 */
import { randomBytes } from 'node:crypto';
import { actorName, isAdminRole, type Actor, type AdminRole } from '../domain/admins.js';
import { adminState, type AuditChange } from '../domain/audit.js';
import { TollgateError } from '../domain/errors.js';
import { generateKey, hashKey } from './key-format.js';
import type { AdminView, NewAdmin } from './admins.js';

const TOKEN_PREFIX = 'tga-';
/** `tga-` and 6 more characters. */
const VISIBLE = TOKEN_PREFIX.length + 6;

/** A stored admin, as both stores select it (never the hash). */
export interface AdminRow {
  id: string;
  name: string;
  role: string;
  prefix: string;
  createdAt: number;
  createdBy: string;
  revokedAt: number | null;
}

/** An admin about to be stored: its token's hash and prefix, never the token. */
export interface AdminRecord extends AdminRow {
  readonly tokenHash: string;
}

/** Whether presented text has the shape of an admin token (the dashboard's login tells it from the others by this). */
export function isAdminTokenText(text: string): boolean {
  return /^tga-[0-9A-Za-z]{43}$/.test(text);
}

/** What is stored of a token: its SHA-256, as for keys. */
export function hashAdminToken(secret: string): string {
  return hashKey(secret);
}

export function adminView(row: AdminRow): AdminView {
  const role: AdminRole = isAdminRole(row.role) ? row.role : 'viewer';
  return { ...row, role, revokedAt: row.revokedAt === null ? null : Number(row.revokedAt), status: row.revokedAt === null ? 'active' : 'revoked' };
}

/** The actor an active row is. */
export function adminActor(row: AdminRow | undefined): Extract<Actor, { kind: 'admin' }> | undefined {
  if (row === undefined || row.revokedAt !== null) return undefined;
  const view = adminView(row);
  return { kind: 'admin', id: view.id, name: view.name, role: view.role };
}

/** Checks the input and makes the token: the record to store, and the token to show once. */
export function newAdminRecord(input: NewAdmin, now: number, actor: Actor): { token: string; record: AdminRecord } {
  const name = input.name.trim();
  // Names are how the trail and `admins revoke` name an admin: no ":" (the CLI's actors are `cli:<user>`), no spaces.
  if (!/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/.test(name) || name === 'bootstrap')
    throw new TollgateError('invalid_value', 'an admin name is 1–64 letters, digits, ".", "_", "@" or "-" (and not "bootstrap")', { param: 'name' });
  if (!isAdminRole(input.role)) throw new TollgateError('invalid_value', 'role must be one of viewer, operator, admin', { param: 'role' });
  const token = TOKEN_PREFIX + generateKey().slice(3);
  const record: AdminRecord = {
    id: `adm_${randomBytes(9).toString('base64url')}`,
    name,
    role: input.role,
    prefix: token.slice(0, VISIBLE),
    tokenHash: hashAdminToken(token),
    createdAt: now,
    createdBy: actorName(actor),
    revokedAt: null,
  };
  return { token, record };
}

/** The one row a reference names: its id, or the name of an active admin (else of the one revoked admin of that name). */
export function onlyAdmin(rows: readonly AdminRow[], ref: string): AdminRow {
  const byId = rows.find((row) => row.id === ref);
  if (byId !== undefined) return byId;
  const active = rows.filter((row) => row.revokedAt === null);
  if (active.length === 1) return active[0]!;
  if (rows.length === 1) return rows[0]!;
  if (rows.length === 0) throw new TollgateError('not_found', `no admin "${ref}"`, { param: 'admin' });
  throw new TollgateError('ambiguous_reference', `several revoked admins are named "${ref}": use the id`, { param: 'admin' });
}

export function nameTaken(name: string): TollgateError {
  return new TollgateError('conflict', `an active admin named "${name}" already exists`, { param: 'name' });
}

/** The audit row of an admin's creation or revocation. */
export function adminChange(actor: Actor, action: 'admin.create' | 'admin.revoke', before: AdminRow | null, after: AdminRow): AuditChange {
  return {
    actor,
    action,
    target: { kind: 'admin', id: after.id, name: after.name },
    before: before === null ? null : adminState(adminView(before)),
    after: adminState(adminView(after)),
  };
}
