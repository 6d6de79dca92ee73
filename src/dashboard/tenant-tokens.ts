/**
 * Read-only dashboard tokens of one tenant: `tgd-` + 32 random bytes in
 * base62, shown once; the store keeps only the SHA-256 and the visible
 * prefix (table `dashboard_tokens`). A token may expire and can be revoked;
 * a session bought with it ends at the next request after either (the
 * session names the token, and every request looks it up).
 *
 * One interface, two stores: the node's SQLite file (here), or PostgreSQL on
 * replicas (pg-tenant-tokens.ts), where every node reads the same tokens.
 * What a token is, what a valid input is and what a row means live here, once.
 */
import { randomBytes } from 'node:crypto';
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import { TollgateError } from '../domain/errors.js';
import { generateKey, hashKey } from '../storage/key-format.js';

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

export interface NewDashboardToken {
  /** The tenant's id or name. */
  readonly tenant: string;
  readonly label?: string | undefined;
  /** Milliseconds since the epoch; null or absent for none. */
  readonly expiresAt?: number | null | undefined;
}

/** A login (by the secret) or a session's request (by the token id its cookie names). */
type ViewerLookup = { readonly secret: string } | { readonly tokenId: string };

/** Where dashboard tokens are kept: every method answers the same on SQLite and PostgreSQL. */
export interface DashboardTokenStore {
  /** Issues a token for a tenant; the secret is in the answer and nowhere else. */
  create(input: NewDashboardToken, now: number): Promise<{ token: string; view: DashboardTokenView }>;
  /** Tokens, newest first; of one tenant if given. */
  list(options: { readonly tenant?: string | undefined }, now: number): Promise<DashboardTokenView[]>;
  /** Revokes a token by its id or visible prefix: its sessions end with their next request. Revoking twice changes nothing. */
  revoke(ref: string, now: number): Promise<DashboardTokenView>;
  /** The tenant an active token opens (undefined when unknown, revoked or expired). */
  activeViewer(by: ViewerLookup, now: number): Promise<TenantViewer | undefined>;
}

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

/** Whether a presented secret looks like a dashboard token (the login form tells it from the admin token). */
export function isDashboardTokenText(text: string): boolean {
  return /^tgd-[0-9A-Za-z]{43}$/.test(text);
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

const SELECT = `SELECT d.id, d.tenant_id AS tenantId, t.name AS tenant, d.prefix, d.label, d.created_at AS createdAt,
  d.expires_at AS expiresAt, d.revoked_at AS revokedAt FROM dashboard_tokens d JOIN tenants t ON t.id = d.tenant_id`;

/** Dashboard tokens in the node's SQLite file (one host, or `--db`). */
export function sqliteDashboardTokens(database: TollgateDatabase): DashboardTokenStore {
  const sqlite = database.sqlite;
  const tenantOf = (ref: string): { id: string; name: string } => {
    const row = sqlite.prepare('SELECT id, name FROM tenants WHERE id = ? OR name = ?').get(ref, ref) as { id: string; name: string } | undefined;
    if (row === undefined) throw noSuchTenant(ref);
    return row;
  };
  const byRef = (ref: string): DashboardTokenRow =>
    onlyToken(sqlite.prepare(`${SELECT} WHERE d.id = ? OR d.prefix = ?`).all(ref, ref) as DashboardTokenRow[], ref);
  return {
    create: async (input, now) => {
      const tenant = tenantOf(input.tenant);
      const { token, record } = newTokenRecord(input, now);
      sqlite
        .prepare('INSERT INTO dashboard_tokens (id, tenant_id, token_hash, prefix, label, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(record.id, tenant.id, record.tokenHash, record.prefix, record.label, now, record.expiresAt);
      return { token, view: issuedView(record, tenant, now) };
    },
    list: async (options, now) => {
      const rows =
        options.tenant === undefined
          ? (sqlite.prepare(`${SELECT} ORDER BY d.created_at DESC, d.id`).all() as DashboardTokenRow[])
          : (sqlite.prepare(`${SELECT} WHERE d.tenant_id = ? ORDER BY d.created_at DESC, d.id`).all(tenantOf(options.tenant).id) as DashboardTokenRow[]);
      return rows.map((row) => tokenView(row, now));
    },
    revoke: async (ref, now) => {
      const token = byRef(ref);
      sqlite.prepare('UPDATE dashboard_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, token.id);
      return tokenView(byRef(token.id), now);
    },
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
