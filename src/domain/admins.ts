/**
 * Who changes Tollgate, and what they may do (docs/admins.md). Pure: the
 * admin API, the dashboard and the CLI ask {@link roleAllows}; the stores
 * write the {@link Actor} of every change into the audit trail.
 */

/** A named admin's role: viewers read; operators also manage keys, tenants, budgets and tenant tokens; admins also manage admins. */
export type AdminRole = 'viewer' | 'operator' | 'admin';

export const ADMIN_ROLES: readonly AdminRole[] = ['viewer', 'operator', 'admin'];

/** What a request or command does, as roles are granted it. */
export type AdminPermission = 'read' | 'operate' | 'manage-admins';

/**
 * Who made a change:
 * - `admin`: a named admin (its token, or a dashboard session bought with it);
 * - `bootstrap`: the holder of TOLLGATE_ADMIN_TOKEN (role admin);
 * - `cli`: the CLI on the database itself, as the OS user running it (role admin: it holds the file);
 * - `system`: Tollgate itself (the runaway stop pausing a key; a store written without an actor).
 */
export type Actor =
  | { readonly kind: 'admin'; readonly id: string; readonly name: string; readonly role: AdminRole }
  | { readonly kind: 'bootstrap' }
  | { readonly kind: 'cli'; readonly user: string }
  | { readonly kind: 'system'; readonly name: string };

export type ActorKind = Actor['kind'];

/** The bootstrap token's holder. */
export const BOOTSTRAP_ACTOR: Actor = Object.freeze({ kind: 'bootstrap' });

/** Writes no one named (tests, scripts writing the store directly). */
export const SYSTEM_ACTOR: Actor = Object.freeze({ kind: 'system', name: 'tollgate' });

/** The CLI run by OS user `user`. */
export function cliActor(user: string): Actor {
  return { kind: 'cli', user };
}

/** The role an actor acts with: a named admin's own, every other is admin. */
export function actorRole(actor: Actor): AdminRole {
  return actor.kind === 'admin' ? actor.role : 'admin';
}

/** How the audit trail names an actor: the admin's name, `bootstrap`, `cli:<user>`, or the system part's name. */
export function actorName(actor: Actor): string {
  switch (actor.kind) {
    case 'admin':
      return actor.name;
    case 'bootstrap':
      return 'bootstrap';
    case 'cli':
      return `cli:${actor.user}`;
    case 'system':
      return actor.name;
  }
}

/** The least role that has a permission. */
export function requiredRole(permission: AdminPermission): AdminRole {
  switch (permission) {
    case 'read':
      return 'viewer';
    case 'operate':
      return 'operator';
    case 'manage-admins':
      return 'admin';
  }
}

/** Whether a role may do what a permission covers (each role has everything the ones below it have). */
export function roleAllows(role: AdminRole, permission: AdminPermission): boolean {
  return ADMIN_ROLES.indexOf(role) >= ADMIN_ROLES.indexOf(requiredRole(permission));
}

/** The permission an admin API request needs: reads for GET/HEAD, else writes; anything under /admins manages admins. */
export function permissionOf(method: string, path: string): AdminPermission {
  if (/^\/admins(?:\/|$)/.test(path)) return 'manage-admins';
  return method === 'GET' || method === 'HEAD' ? 'read' : 'operate';
}

export function isAdminRole(value: string): value is AdminRole {
  return (ADMIN_ROLES as readonly string[]).includes(value);
}
