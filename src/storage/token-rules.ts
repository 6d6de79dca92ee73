/**
 * What a dashboard token is, what a valid new one is and what a stored row
 * means, once for both stores (src/storage/tenant-tokens.ts). Pure.
 */
import { randomBytes } from 'node:crypto';
import type { Actor } from '../domain/admins.js';
import { tenantTokenState, type AuditChange } from '../domain/audit.js';
import { TollgateError } from '../domain/errors.js';
import { generateKey, hashKey } from './key-format.js';
import type { DashboardTokenView, NewDashboardToken, TenantViewer } from './tenant-tokens.js';

const TOKEN_PREFIX = 'tgd-';
/** `tgd-` and 6 more characters. */
const VISIBLE = TOKEN_PREFIX.length + 6;

/** A stored token joined with its tenant's name, as both stores select it. */
export interface DashboardTokenRow {
  id: string;
  tenantId: string;
  tenant: string;
  prefix: string;
  label: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

/** A token about to be stored: only its hash and prefix, never the secret. */
export interface TokenRecord {
  readonly id: string;
  readonly tokenHash: string;
  readonly prefix: string;
  readonly label: string;
  readonly expiresAt: number | null;
}

export function tokenView(row: DashboardTokenRow, now: number): DashboardTokenView {
  const status = row.revokedAt !== null ? 'revoked' : row.expiresAt !== null && row.expiresAt <= now ? 'expired' : 'active';
  return { ...row, status };
}

/** The viewer a row opens, if it is active at `now`. */
export function activeViewerOf(row: DashboardTokenRow | undefined, now: number): TenantViewer | undefined {
  if (row === undefined || tokenView(row, now).status !== 'active') return undefined;
  return { tokenId: row.id, tenantId: row.tenantId, tenant: row.tenant, expiresAt: row.expiresAt };
}

/** What is stored of a secret: its SHA-256, as for keys. */
export function hashDashboardToken(secret: string): string {
  return hashKey(secret);
}

export function noSuchTenant(ref: string): TollgateError {
  return new TollgateError('not_found', `no tenant "${ref}"`, { param: 'tenant' });
}

/** Checks the input and makes the secret: the record to store, and the token to show once. */
export function newTokenRecord(input: NewDashboardToken, now: number): { token: string; record: TokenRecord } {
  if (input.expiresAt !== undefined && input.expiresAt !== null && input.expiresAt <= now)
    throw new TollgateError('invalid_value', 'the expiry is in the past', { param: 'expires' });
  const label = (input.label ?? '').trim();
  if (label.length > 200) throw new TollgateError('invalid_value', 'the label is longer than 200 characters', { param: 'label' });
  const token = TOKEN_PREFIX + generateKey().slice(3);
  const record = {
    id: `dtk_${randomBytes(9).toString('base64url')}`,
    tokenHash: hashDashboardToken(token),
    prefix: token.slice(0, VISIBLE),
    label,
    expiresAt: input.expiresAt ?? null,
  };
  return { token, record };
}

/** The view of a record just stored. */
export function issuedView(record: TokenRecord, tenant: { readonly id: string; readonly name: string }, now: number): DashboardTokenView {
  const { tokenHash: _hash, ...shown } = record;
  return tokenView({ ...shown, tenantId: tenant.id, tenant: tenant.name, createdAt: now, revokedAt: null }, now);
}

/** The one row a reference (id or visible prefix) names. */
export function onlyToken(rows: readonly DashboardTokenRow[], ref: string): DashboardTokenRow {
  if (rows.length === 0) throw new TollgateError('not_found', `no dashboard token "${ref}"`, { param: 'token' });
  if (rows.length > 1) throw new TollgateError('ambiguous_reference', `"${ref}" names ${rows.length} dashboard tokens: use the id`, { param: 'token' });
  return rows[0]!;
}

/** The audit row of a token's issue or revocation (never its secret or hash). */
export function tokenChange(
  actor: Actor,
  action: 'tenant-token.create' | 'tenant-token.revoke',
  before: DashboardTokenView | null,
  after: DashboardTokenView,
): AuditChange {
  return {
    actor,
    action,
    target: { kind: 'tenant-token', id: after.id, name: `${after.tenant}/${after.prefix}` },
    before: before === null ? null : tenantTokenState(before),
    after: tenantTokenState(after),
  };
}
