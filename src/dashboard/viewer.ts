/**
 * Who is looking at the dashboard: the operator (admin session) or one
 * tenant (a session bought with that tenant's read-only dashboard token),
 * and the view context each of them gets. The tenant's context reads only
 * its own keys (tenant-scope.ts) and sees no global limits.
 */
import type { Context } from 'hono';
import type { TollgateDatabase } from '../db/open.js';
import { DashboardReads } from './reads.js';
import { hasValidSession, tenantSessionTokenId } from './session.js';
import { TenantScopedReads } from './tenant-scope.js';
import { activeViewer, type TenantViewer } from './tenant-tokens.js';
import type { LimitSnapshot, ViewContext } from './view-context.js';

export type Viewer = { readonly kind: 'admin' } | { readonly kind: 'tenant'; readonly tenant: TenantViewer };

const ADMIN: Viewer = Object.freeze({ kind: 'admin' });

/** The viewer of a request's session cookie, if it carries a valid one (a tenant's only while its token is active). */
export function viewerOf(c: Context, database: TollgateDatabase, adminToken: string | undefined, now: number): Viewer | undefined {
  if (adminToken === undefined) return undefined;
  if (hasValidSession(c, adminToken, now)) return ADMIN;
  const tokenId = tenantSessionTokenId(c, adminToken, now);
  if (tokenId === undefined) return undefined;
  const tenant = activeViewer(database, { tokenId }, now);
  return tenant === undefined ? undefined : { kind: 'tenant', tenant };
}

const readsByDatabase = new WeakMap<TollgateDatabase, DashboardReads>();
const tenantReadsByDatabase = new WeakMap<TollgateDatabase, Map<string, TenantScopedReads>>();

/** One set of reads (prepared statements, the parsed key directory) per database, and per tenant. */
function readsFor(database: TollgateDatabase, viewer: Viewer): DashboardReads {
  if (viewer.kind === 'tenant') {
    let byTenant = tenantReadsByDatabase.get(database);
    if (byTenant === undefined) {
      byTenant = new Map();
      tenantReadsByDatabase.set(database, byTenant);
    }
    let reads = byTenant.get(viewer.tenant.tenantId);
    if (reads === undefined) {
      reads = new TenantScopedReads(database, viewer.tenant.tenantId);
      byTenant.set(viewer.tenant.tenantId, reads);
    }
    return reads;
  }
  let reads = readsByDatabase.get(database);
  if (reads === undefined) {
    reads = new DashboardReads(database);
    readsByDatabase.set(database, reads);
  }
  return reads;
}

/** The view context of a viewer: a tenant's reads are narrowed, and it sees its key's and tenant's buckets, not the global ones. */
export function viewContextFor(
  deps: { readonly database: TollgateDatabase; readonly limitSnapshot?: LimitSnapshot | undefined },
  now: number,
  viewer: Viewer,
): ViewContext {
  const snapshot = deps.limitSnapshot;
  if (viewer.kind === 'admin') return { reads: readsFor(deps.database, viewer), now, limitSnapshot: snapshot };
  return {
    reads: readsFor(deps.database, viewer),
    now,
    limitSnapshot: snapshot === undefined ? undefined : (keyId) => snapshot(keyId).filter((entry) => !entry.limitName.startsWith('global ')),
    tenant: { id: viewer.tenant.tenantId, name: viewer.tenant.tenant },
  };
}
