/**
 * Read-only dashboard tokens of one tenant: `tgd-` + 32 random bytes in
 * base62, shown once; the database keeps only the SHA-256 and the visible
 * prefix (table `dashboard_tokens`). A token may expire and can be revoked;
 * a session bought with it ends at the next request after either (the
 * session names the token, and every request looks it up).
 */
import { randomBytes } from 'node:crypto';
import type { TollgateDatabase } from '../db/open.js';
import { TollgateError } from '../errors.js';
import { generateKey, hashKey } from '../keys/key-format.js';

const TOKEN_PREFIX = 'tgd-';
/** `tgd-` and 6 more characters. */
const VISIBLE = TOKEN_PREFIX.length + 6;

/** A token as people see it (never its hash). */
export interface DashboardTokenView {
  readonly id: string;
  readonly tenantId: string;
  readonly tenant: string;
  readonly prefix: string;
  readonly label: string;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
  readonly status: 'active' | 'revoked' | 'expired';
}

/** The tenant a valid token or session opens. */
export interface TenantViewer {
  readonly tokenId: string;
  readonly tenantId: string;
  readonly tenant: string;
  readonly expiresAt: number | null;
}

interface Row {
  id: string;
  tenantId: string;
  tenant: string;
  prefix: string;
  label: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

const SELECT = `SELECT d.id, d.tenant_id AS tenantId, t.name AS tenant, d.prefix, d.label, d.created_at AS createdAt,
  d.expires_at AS expiresAt, d.revoked_at AS revokedAt FROM dashboard_tokens d JOIN tenants t ON t.id = d.tenant_id`;

function view(row: Row, now: number): DashboardTokenView {
  const status = row.revokedAt !== null ? 'revoked' : row.expiresAt !== null && row.expiresAt <= now ? 'expired' : 'active';
  return { ...row, status };
}

/** Whether a presented secret looks like a dashboard token (the login form tells it from the admin token). */
export function isDashboardTokenText(text: string): boolean {
  return /^tgd-[0-9A-Za-z]{43}$/.test(text);
}

function tenantIdOf(database: TollgateDatabase, ref: string): { id: string; name: string } {
  const row = database.sqlite.prepare('SELECT id, name FROM tenants WHERE id = ? OR name = ?').get(ref, ref) as { id: string; name: string } | undefined;
  if (row === undefined) throw new TollgateError('not_found', `no tenant "${ref}"`, { param: 'tenant' });
  return row;
}

/** Issues a token for a tenant; the secret is in the answer and nowhere else. */
export function createDashboardToken(
  database: TollgateDatabase,
  input: { readonly tenant: string; readonly label?: string | undefined; readonly expiresAt?: number | null | undefined },
  now: number,
): { token: string; view: DashboardTokenView } {
  const tenant = tenantIdOf(database, input.tenant);
  if (input.expiresAt !== undefined && input.expiresAt !== null && input.expiresAt <= now)
    throw new TollgateError('invalid_value', 'the expiry is in the past', { param: 'expires' });
  const label = (input.label ?? '').trim();
  if (label.length > 200) throw new TollgateError('invalid_value', 'the label is longer than 200 characters', { param: 'label' });
  const token = TOKEN_PREFIX + generateKey().slice(3);
  const id = `dtk_${randomBytes(9).toString('base64url')}`;
  database.sqlite
    .prepare('INSERT INTO dashboard_tokens (id, tenant_id, token_hash, prefix, label, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(id, tenant.id, hashKey(token), token.slice(0, VISIBLE), label, now, input.expiresAt ?? null);
  return { token, view: getDashboardToken(database, id, now) };
}

/** Tokens, newest first; of one tenant if given. */
export function listDashboardTokens(database: TollgateDatabase, options: { readonly tenant?: string | undefined }, now: number): DashboardTokenView[] {
  const rows =
    options.tenant === undefined
      ? (database.sqlite.prepare(`${SELECT} ORDER BY d.created_at DESC, d.id`).all() as Row[])
      : (database.sqlite.prepare(`${SELECT} WHERE d.tenant_id = ? ORDER BY d.created_at DESC, d.id`).all(tenantIdOf(database, options.tenant).id) as Row[]);
  return rows.map((row) => view(row, now));
}

/** A token by its id or visible prefix. */
function getDashboardToken(database: TollgateDatabase, ref: string, now: number): DashboardTokenView {
  const rows = database.sqlite.prepare(`${SELECT} WHERE d.id = ? OR d.prefix = ?`).all(ref, ref) as Row[];
  if (rows.length === 0) throw new TollgateError('not_found', `no dashboard token "${ref}"`, { param: 'token' });
  if (rows.length > 1) throw new TollgateError('ambiguous_reference', `"${ref}" names ${rows.length} dashboard tokens: use the id`, { param: 'token' });
  return view(rows[0]!, now);
}

/** Revokes a token: its sessions end with their next request. Revoking twice changes nothing. */
export function revokeDashboardToken(database: TollgateDatabase, ref: string, now: number): DashboardTokenView {
  const token = getDashboardToken(database, ref, now);
  database.sqlite.prepare('UPDATE dashboard_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, token.id);
  return getDashboardToken(database, token.id, now);
}

/** The tenant an active token opens, by the secret (login) or by its id (each request of a session). */
export function activeViewer(
  database: TollgateDatabase,
  by: { readonly secret: string } | { readonly tokenId: string },
  now: number,
): TenantViewer | undefined {
  const row = (
    'secret' in by
      ? database.sqlite.prepare(`${SELECT} WHERE d.token_hash = ?`).get(hashKey(by.secret))
      : database.sqlite.prepare(`${SELECT} WHERE d.id = ?`).get(by.tokenId)
  ) as Row | undefined;
  if (row === undefined || view(row, now).status !== 'active') return undefined;
  return { tokenId: row.id, tenantId: row.tenantId, tenant: row.tenant, expiresAt: row.expiresAt };
}
