/**
 * Who is looking at the dashboard: the operator (admin session) or one
 * tenant (a session bought with that tenant's read-only dashboard token),
 * and the view context each of them gets. The tenant's context reads only
 * its own keys (tenant-scope.ts, over the storage's reads) and
 * sees no global limits.
 */
import type { Context } from 'hono';
import type { DashboardReads } from '../storage/dashboard-reads.js';
import { resolveSessionActor, tenantSessionTokenId } from './session.js';
import type { Actor } from '../domain/admins.js';
import type { AdminStore } from '../storage/admins.js';
import { TenantScopedReads } from './tenant-scope.js';
import type { DashboardTokenStore, TenantViewer } from '../storage/tenant-tokens.js';
import type { LimitSnapshot, ViewContext } from './view-context.js';

/** An operator (the bootstrap admin or a named one, `actor` with its role) or one tenant. */
export type Viewer = { readonly kind: 'admin'; readonly actor: Actor } | { readonly kind: 'tenant'; readonly tenant: TenantViewer };

/**
 * The viewer of a request's session cookie, if it carries a valid one (a
 * tenant's only while its token is active: the store is read every time, so a
 * revocation on any node ends the session at its next request).
 */
export async function viewerOf(
  c: Context,
  stores: { readonly tokens: DashboardTokenStore; readonly admins: AdminStore | undefined },
  adminToken: string | undefined,
  now: number,
): Promise<Viewer | undefined> {
  if (adminToken === undefined) return undefined;
  const actor = await resolveSessionActor(c, adminToken, stores.admins, now);
  if (actor !== undefined) return { kind: 'admin', actor };
  const tokens = stores.tokens;
  const tokenId = tenantSessionTokenId(c, adminToken, now);
  if (tokenId === undefined) return undefined;
  const tenant = await tokens.activeViewer({ tokenId }, now);
  return tenant === undefined ? undefined : { kind: 'tenant', tenant };
}

const tenantReadsByInner = new WeakMap<DashboardReads, Map<string, TenantScopedReads>>();

/** The reads of a viewer: the admin's, or per tenant the admin's narrowed to it (kept, so its directory is filtered once per change). */
function readsFor(inner: DashboardReads, viewer: Viewer): DashboardReads {
  if (viewer.kind === 'admin') return inner;
  let byTenant = tenantReadsByInner.get(inner);
  if (byTenant === undefined) {
    byTenant = new Map();
    tenantReadsByInner.set(inner, byTenant);
  }
  let scoped = byTenant.get(viewer.tenant.tenantId);
  if (scoped === undefined) {
    scoped = new TenantScopedReads(inner, viewer.tenant.tenantId);
    byTenant.set(viewer.tenant.tenantId, scoped);
  }
  return scoped;
}

/** The view context of a viewer: a tenant's reads are narrowed, and it sees its key's and tenant's buckets, not the global ones. */
export function viewContextFor(
  deps: { readonly reads: DashboardReads; readonly limitSnapshot?: LimitSnapshot | undefined },
  now: number,
  viewer: Viewer,
): ViewContext {
  const snapshot = deps.limitSnapshot;
  const reads = readsFor(deps.reads, viewer);
  if (viewer.kind === 'admin') return { reads, now, limitSnapshot: snapshot };
  return {
    reads,
    now,
    limitSnapshot: snapshot === undefined ? undefined : (keyId) => snapshot(keyId).filter((entry) => !entry.limitName.startsWith('global ')),
    tenant: { id: viewer.tenant.tenantId, name: viewer.tenant.tenant },
  };
}
