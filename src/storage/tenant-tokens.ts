/**
 * Read-only dashboard tokens of one tenant: `tgd-` + 32 random bytes in
 * base62, shown once; the store keeps only the SHA-256 and the visible
 * prefix (table `dashboard_tokens`). A token may expire and can be revoked;
 * a session bought with it ends at the next request after either (the
 * session names the token, and every request looks it up).
 *
 * One interface, two stores: the node's SQLite file
 * (src/storage/sqlite/tenant-tokens.ts), or PostgreSQL on replicas
 * (src/storage/postgres/tenant-tokens.ts), where every node reads the same
 * tokens. What a token is, what a valid input is and what a row means live
 * once, in src/storage/token-rules.ts. Issuing and revoking append their
 * audit row in the same transaction (src/domain/audit.ts).
 */

import type { Actor } from '../domain/admins.js';

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
  /** Issues a token for a tenant; the secret is in the answer and nowhere else. Audited (in the same transaction) under `actor`. */
  create(input: NewDashboardToken, now: number, actor?: Actor): Promise<{ token: string; view: DashboardTokenView }>;
  /** Tokens, newest first; of one tenant if given. */
  list(options: { readonly tenant?: string | undefined }, now: number): Promise<DashboardTokenView[]>;
  /** Revokes a token by its id or visible prefix: its sessions end with their next request. Revoking twice changes nothing. */
  revoke(ref: string, now: number, actor?: Actor): Promise<DashboardTokenView>;
  /** The tenant an active token opens (undefined when unknown, revoked or expired). */
  activeViewer(by: ViewerLookup, now: number): Promise<TenantViewer | undefined>;
}
