/**
 * The operator's operations — keys, tenants, spend, admins, tenants'
 * dashboard tokens, the audit trail — as one interface with two
 * implementations: on this installation's store (keys and tenants in the
 * KeyStore of src/storage/keys.ts, on SQLite or PostgreSQL alike), or on a
 * remote proxy through its admin API (client.ts). The CLI uses either; the
 * admin API and the dashboard serve the first.
 *
 * The store's operations are taken for an actor (`storeAdminOps(…).as(actor)`):
 * every write names it in its audit row (written in the change's own
 * transaction, docs/admins.md) and is refused with 403 `insufficient_role`
 * when the actor's role does not allow it — whichever surface forgot to ask.
 */
import { actorRole, requiredRole, roleAllows, type Actor, type AdminPermission } from '../domain/admins.js';
import type { AuditAction, AuditTargetKind } from '../domain/audit.js';
import { pgUnavailable, TollgateError } from '../domain/errors.js';
import { parseExportRange } from '../reports/export.js';
import type { AdminStore, AdminView, NewAdmin } from '../storage/admins.js';
import type { AuditPage, AuditReads } from '../storage/audit.js';
import { DEFAULT_AUDIT_PAGE } from '../storage/audit.js';
import type { DashboardTokenStore, DashboardTokenView, NewDashboardToken } from '../storage/tenant-tokens.js';
import { isPgUnreachable } from '../storage/postgres/open.js';
import type { SpendGrouping, SpendQuery, SpendReport } from '../storage/spend-reads.js';
import type { IssuedKey, KeyListOptions, KeyPatch, KeyStore, KeyView, NewKey, NewTenantPolicy, TenantPatch, TenantView } from '../storage/keys.js';
import type { PauseOwner } from '../domain/keys.js';

interface SpendRequest {
  /** A key reference (id, name or prefix). */
  readonly key?: string | undefined;
  readonly tenant?: string | undefined;
  readonly since: string;
  readonly until?: string | undefined;
  readonly by: SpendGrouping;
  /** Rows of the page (default: every row; the admin API always asks for a page: src/storage/spend-cursor.ts). */
  readonly limit?: number | undefined;
  /** The previous page's `nextCursor`. */
  readonly cursor?: string | undefined;
}

/** A page of the audit trail (newest first). */
export interface AuditRequest {
  /** One key's rows (its id, name or prefix). */
  readonly key?: string | undefined;
  /** One tenant's own rows (its id or name; not its keys'). */
  readonly tenant?: string | undefined;
  readonly targetKind?: AuditTargetKind | undefined;
  /** As `tollgate spend` takes it (7d, today, month, YYYY-MM-DD) or an instant; none: from the first row. */
  readonly since?: string | undefined;
  /** A day (included) or an instant (excluded); none: up to now. */
  readonly until?: string | undefined;
  /** The actor's name as the trail writes it (`alice`, `bootstrap`, `cli:bob`). */
  readonly actor?: string | undefined;
  readonly action?: AuditAction | undefined;
  /** Rows of the page (default 100, at most 1000). */
  readonly limit?: number | undefined;
  readonly cursor?: string | undefined;
}

export interface AdminOps {
  createKey(input: NewKey): Promise<IssuedKey>;
  listKeys(options: KeyListOptions): Promise<KeyView[]>;
  getKey(ref: string): Promise<KeyView>;
  updateKey(ref: string, patch: KeyPatch): Promise<KeyView>;
  revokeKey(ref: string): Promise<KeyView>;
  /** Lifts the runaway stop's pause: of one session or end user, or of the key and everything paused on it. */
  resumeKey(ref: string, owner?: PauseOwner): Promise<KeyView>;
  rotateKey(ref: string): Promise<IssuedKey>;
  /** An operator's suspension of the key, until lifted (src/storage/keys.ts): not the runaway stop's pause, which `resumeKey` lifts. */
  suspendKey(ref: string): Promise<KeyView>;
  unsuspendKey(ref: string): Promise<KeyView>;
  createTenant(name: string, policy: NewTenantPolicy): Promise<TenantView>;
  listTenants(): Promise<TenantView[]>;
  getTenant(ref: string): Promise<TenantView>;
  updateTenant(ref: string, patch: TenantPatch): Promise<TenantView>;
  spend(request: SpendRequest): Promise<SpendReport>;
  /** Named admins (manage-admins: role admin). */
  createAdmin(input: NewAdmin): Promise<{ token: string; view: AdminView }>;
  listAdmins(): Promise<AdminView[]>;
  revokeAdmin(ref: string): Promise<AdminView>;
  /** Tenants' read-only dashboard tokens. */
  createTenantToken(input: NewDashboardToken): Promise<{ token: string; view: DashboardTokenView }>;
  listTenantTokens(options: { readonly tenant?: string | undefined }): Promise<DashboardTokenView[]>;
  revokeTenantToken(ref: string): Promise<DashboardTokenView>;
  /** One page of the audit trail. */
  audit(request: AuditRequest): Promise<AuditPage>;
  close(): Promise<void>;
}

/** This installation's operations, taken for whoever acts. */
export interface ActingAdminOps {
  /** The operations as `actor`: its writes are audited under its name and need its role. */
  as(actor: Actor): AdminOps;
}

/** What the store's operations read and write. */
export interface AdminStores {
  readonly keys: KeyStore;
  readonly admins: AdminStore;
  readonly audit: AuditReads;
  readonly dashboardTokens: DashboardTokenStore;
}

/** The actor of a request the admin API or the dashboard has checked (src/app-env.ts); none is a 401, never a write as nobody. */
export function actorOf(c: { get(name: 'actor'): Actor | undefined }): Actor {
  const actor = c.get('actor');
  if (actor === undefined) throw new TollgateError('invalid_admin_token', 'A valid admin token or dashboard session is required.');
  return actor;
}

/** Refuses `actor` what its role does not allow: 403 naming the role needed. */
export function requireRole(actor: Actor, permission: AdminPermission): void {
  const role = actorRole(actor);
  if (roleAllows(role, permission)) return;
  const needed = requiredRole(permission);
  throw new TollgateError(
    'insufficient_role',
    `This needs the ${needed} role; ${actor.kind === 'admin' ? `admin "${actor.name}"` : 'you'} ${role === 'admin' ? 'is an' : 'is a'} ${role}.`,
  );
}

/** Where spend reports are read (the proxy: on its read worker, src/storage/sqlite/read-worker.ts; replicas: PostgreSQL). */
export type SpendReader = (query: SpendQuery, now: number) => Promise<SpendReport>;

/** The operations on this installation's own store (what the CLI opens without --url, and what the admin API serves). */
export function storeAdminOps(
  stores: AdminStores,
  options: {
    readSpend: SpendReader;
    now?: () => number;
    /** After every change (the node that made it sees it before answering; the others by polling or notification). */
    onChange?: () => unknown;
    /** Closes what was opened for these operations (the CLI's database or pool). */
    close?: () => Promise<void> | void;
  },
): ActingAdminOps {
  const now = options.now ?? Date.now;
  const { keys, admins, dashboardTokens } = stores;
  const changed = async <T>(value: T): Promise<T> => {
    await options.onChange?.();
    return value;
  };
  return { as: (actor) => actingOps(actor) };

  function actingOps(actor: Actor): AdminOps {
    /** The write, once the actor's role allows it. */
    const may =
      <A extends unknown[], T>(permission: AdminPermission, fn: (...args: A) => Promise<T>) =>
      async (...args: A): Promise<T> => {
        requireRole(actor, permission);
        return fn(...args);
      };
    const operate = <A extends unknown[], T>(fn: (...args: A) => Promise<T>) => may('operate', async (...args: A) => changed(await fn(...args)));
    return {
      createKey: operate((input: NewKey) => keys.createKey(input, actor)),
      listKeys: (opts) => keys.listKeys(opts),
      getKey: (ref) => keys.getKey(ref),
      updateKey: operate((ref: string, patch: KeyPatch) => keys.updateKey(ref, patch, actor)),
      revokeKey: operate((ref: string) => keys.revokeKey(ref, actor)),
      resumeKey: operate((ref: string, owner?: PauseOwner) => (owner === undefined ? keys.resumeKey(ref, actor) : keys.releaseOwner(ref, owner, actor))),
      rotateKey: operate((ref: string) => keys.rotateKey(ref, actor)),
      suspendKey: operate((ref: string) => keys.suspendKey(ref, actor)),
      unsuspendKey: operate((ref: string) => keys.unsuspendKey(ref, actor)),
      createTenant: operate((name: string, policy: NewTenantPolicy) => keys.createTenant(name, policy, actor)),
      listTenants: () => keys.listTenants(),
      getTenant: (ref) => keys.getTenant(ref),
      updateTenant: operate((ref: string, patch: TenantPatch) => keys.updateTenant(ref, patch, actor)),
      createAdmin: may('manage-admins', (input: NewAdmin) => admins.create(input, now(), actor)),
      listAdmins: may('manage-admins', () => admins.list()),
      // A revoked admin is refused at its next request on every node: nothing to refresh.
      revokeAdmin: may('manage-admins', (ref: string) => admins.revoke(ref, now(), actor)),
      createTenantToken: may('operate', (input: NewDashboardToken) => dashboardTokens.create(input, now(), actor)),
      listTenantTokens: (opts) => dashboardTokens.list(opts, now()),
      revokeTenantToken: may('operate', (ref: string) => dashboardTokens.revoke(ref, now(), actor)),
      audit: (request) => readAudit(stores, request, now()),
      spend: async (request) => {
        const query: SpendQuery = {
          keyId: request.key === undefined ? undefined : (await keys.getKey(request.key)).id,
          tenantId: request.tenant === undefined ? undefined : (await keys.getTenant(request.tenant)).id,
          since: request.since,
          until: request.until,
          by: request.by,
          limit: request.limit,
          cursor: request.cursor,
        };
        try {
          return await options.readSpend(query, now());
        } catch (error) {
          // A replica's spend: "PostgreSQL did not answer" as the 503 every other operation gives.
          if (!isPgUnreachable(error)) throw error;
          throw pgUnavailable('Keys, tenants and spend live in', error);
        }
      },
      close: async () => {
        await options.close?.();
      },
    };
  }
}

/** A page of the trail: references resolved to ids, the period to instants. */
async function readAudit(stores: AdminStores, request: AuditRequest, now: number): Promise<AuditPage> {
  let range: { sinceMs: number; untilMs: number } | undefined;
  try {
    // No `since`: from the first row (1970-01-01 stands in only to check the period).
    range = request.since === undefined && request.until === undefined ? undefined : parseExportRange(request.since ?? '1970-01-01', request.until, now);
  } catch (error) {
    throw new TollgateError('invalid_value', (error as Error).message, { param: 'since' });
  }
  const target =
    request.key !== undefined
      ? { targetKind: 'key' as const, targetId: (await stores.keys.getKey(request.key)).id }
      : request.tenant !== undefined
        ? { targetKind: 'tenant' as const, targetId: (await stores.keys.getTenant(request.tenant)).id }
        : { targetKind: request.targetKind };
  return stores.audit.page({
    ...target,
    since: request.since === undefined ? undefined : range?.sinceMs,
    until: request.until === undefined ? undefined : range?.untilMs,
    actor: request.actor,
    action: request.action,
    limit: request.limit ?? DEFAULT_AUDIT_PAGE,
    cursor: request.cursor,
  });
}
